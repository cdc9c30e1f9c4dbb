//! How a context runs its loops, and the `PARLOOP_*` environment variables every program reads.
//! Each variable is validated: an unknown variable or value is an error that lists what is
//! accepted, never a silent default.

use crate::error::{Error, Result};

/// How racing increments (INC/MIN/MAX through a map) are made safe.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Strategy {
    /// `atomics` on GPUs with native f32 atomics, else `global-colour` (CPU adapters,
    /// adapters without float atomics; see ARCHITECTURE.md for the measurements behind this
    /// choice).
    #[default]
    Auto,
    /// Coloured mini-partitions, one per workgroup, with staging.
    Hierarchical,
    /// One-level element colouring, one dispatch per colour.
    GlobalColour,
    /// Native f32 atomics (adapters with SHADER_FLOAT32_ATOMIC).
    Atomics,
    /// Compare-and-swap on u32 bit patterns.
    Cas,
    /// Mini-partitions (one per workgroup) whose increments are combined in workgroup memory
    /// with workgroup atomics (compare-and-swap on u32 bit patterns for f32), no thread
    /// colours; block colours for the write to global memory. Needs no float atomics.
    Staged,
}

impl Strategy {
    /// Every strategy, `auto` first: parsing, the messages that list the accepted names and
    /// [`Variant::ALL`] follow this list.
    pub const ALL: [Strategy; 6] = [
        Strategy::Auto,
        Strategy::Hierarchical,
        Strategy::GlobalColour,
        Strategy::Atomics,
        Strategy::Cas,
        Strategy::Staged,
    ];

    /// Reads `PARLOOP_STRATEGY`'s syntax: a name of [`Strategy::ALL`] (`auto`, `hierarchical`,
    /// `global-colour`, `atomics`, `cas`, `staged`), or `global-color`, `colour`, `color`.
    pub fn parse(s: &str) -> Option<Strategy> {
        let s = s.trim().to_ascii_lowercase();
        match s.as_str() {
            "" => Some(Strategy::Auto),
            "global-color" | "colour" | "color" => Some(Strategy::GlobalColour),
            _ => Strategy::ALL.into_iter().find(|k| k.name() == s),
        }
    }
    /// The strategy's name, as `parse` reads it.
    pub fn name(self) -> &'static str {
        match self {
            Strategy::Auto => "auto",
            Strategy::Hierarchical => "hierarchical",
            Strategy::GlobalColour => "global-colour",
            Strategy::Atomics => "atomics",
            Strategy::Cas => "cas",
            Strategy::Staged => "staged",
        }
    }
    /// The accepted names, for messages: "auto, hierarchical, ..., cas or staged".
    pub fn names() -> String {
        let names: Vec<&str> = Strategy::ALL.iter().map(|s| s.name()).collect();
        let (last, rest) = names.split_last().expect("strategies");
        format!("{} or {last}", rest.join(", "))
    }
    /// Whether the strategy needs native f32 atomics (`SHADER_FLOAT32_ATOMIC`) for f32
    /// increments through maps.
    pub fn needs_float_atomics(self) -> bool {
        match self {
            Strategy::Atomics => true,
            Strategy::Auto
            | Strategy::Hierarchical
            | Strategy::GlobalColour
            | Strategy::Cas
            | Strategy::Staged => false,
        }
    }
    /// Whether it can apply f64 increments through maps (WGSL has no 64-bit atomics: only
    /// the colouring strategies can).
    pub fn takes_f64(self) -> bool {
        match self {
            Strategy::Auto | Strategy::Hierarchical | Strategy::GlobalColour => true,
            Strategy::Atomics | Strategy::Cas | Strategy::Staged => false,
        }
    }
}

/// A strategy with the staging it runs with: what a program can be run under. Staging
/// matters only to `hierarchical`; the others stage nothing or always the increments.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Variant {
    /// The strategy.
    pub strategy: Strategy,
    /// Its staging (`Staging::Inc` where staging does not matter).
    pub staging: Staging,
}

impl Variant {
    /// Every variant a user can pick, except `auto` (which is one of them, per adapter): the
    /// one list that the tests, the fuzzers and `parloop bench` iterate. The order is fixed
    /// (the fuzzer's regression seeds pick from it by index): append, never reorder.
    pub const ALL: [Variant; 7] = [
        Variant::new(Strategy::Hierarchical, Staging::Inc),
        Variant::new(Strategy::Hierarchical, Staging::All),
        Variant::new(Strategy::Hierarchical, Staging::None),
        Variant::new(Strategy::GlobalColour, Staging::Inc),
        Variant::new(Strategy::Cas, Staging::Inc),
        Variant::new(Strategy::Atomics, Staging::Inc),
        Variant::new(Strategy::Staged, Staging::Inc),
    ];
    /// `auto` with the default staging.
    pub const AUTO: Variant = Variant::new(Strategy::Auto, Staging::Inc);

    /// A strategy with its staging.
    pub const fn new(strategy: Strategy, staging: Staging) -> Variant {
        Variant { strategy, staging }
    }
    /// The variants that run on an adapter with (or without) native f32 atomics.
    pub fn available(float_atomics: bool) -> impl Iterator<Item = Variant> {
        Variant::ALL
            .into_iter()
            .filter(move |v| float_atomics || !v.strategy.needs_float_atomics())
    }
    /// A short name: the strategy's, with `-inc`, `-all` or `-none` for `hierarchical`
    /// (`parloop bench --strategies`, `FUZZ_STRATEGIES`).
    pub fn name(self) -> &'static str {
        match (self.strategy, self.staging) {
            (Strategy::Hierarchical, Staging::Inc) => "hierarchical-inc",
            (Strategy::Hierarchical, Staging::All) => "hierarchical-all",
            (Strategy::Hierarchical, Staging::None) => "hierarchical-none",
            (
                Strategy::Auto
                | Strategy::GlobalColour
                | Strategy::Atomics
                | Strategy::Cas
                | Strategy::Staged,
                _,
            ) => self.strategy.name(),
        }
    }
    /// A label for tables: "hierarchical, INC staged", "staged (workgroup atomics)", ...
    pub fn label(self) -> &'static str {
        match (self.strategy, self.staging) {
            (Strategy::Hierarchical, Staging::Inc) => "hierarchical, INC staged",
            (Strategy::Hierarchical, Staging::All) => "hierarchical, all staged",
            (Strategy::Hierarchical, Staging::None) => "hierarchical, nothing staged",
            (Strategy::Staged, _) => "staged (workgroup atomics)",
            (Strategy::Auto | Strategy::GlobalColour | Strategy::Atomics | Strategy::Cas, _) => {
                self.strategy.name()
            }
        }
    }
}

/// What a hierarchical loop stages in workgroup memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Staging {
    /// Nothing: increments go to global memory colour by colour (storage barriers).
    None,
    /// Racing (incremented) data only.
    #[default]
    Inc,
    /// Racing data and indirectly read data.
    All,
}

/// Which adapter to use.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum AdapterChoice {
    /// Hardware if present, else software.
    #[default]
    Auto,
    /// A hardware adapter, or an error if there is none.
    Hardware,
    /// A software adapter (lavapipe, llvmpipe, WARP), or an error if there is none.
    Software,
    /// The first adapter whose name contains this (case-insensitive).
    Name(String),
}

impl AdapterChoice {
    /// Reads `PARLOOP_ADAPTER`'s syntax: `auto`, `hardware`, `software`, or part of an adapter's name.
    pub fn parse(s: &str) -> AdapterChoice {
        match s.trim().to_ascii_lowercase().as_str() {
            "" | "auto" => AdapterChoice::Auto,
            "hardware" | "hw" | "gpu" => AdapterChoice::Hardware,
            "software" | "sw" | "cpu" => AdapterChoice::Software,
            other => AdapterChoice::Name(other.to_string()),
        }
    }
}

/// Seconds a rank waits for the others before the job is aborted (`Config::comm_timeout_s`).
pub const DEFAULT_COMM_TIMEOUT_S: f64 = 600.0;

/// How a context runs its loops. [`Config::from_env`] reads the `PARLOOP_*` variables.
#[derive(Clone, Debug)]
pub struct Config {
    /// Record par_loops and run them when a result is needed (`PARLOOP_LAZY=0` runs each loop
    /// as it is recorded).
    pub lazy: bool,
    /// Fuse the loops of a force into the fewest groups (`PARLOOP_FUSION=0` runs one shader per
    /// loop).
    pub fusion: bool,
    /// How racing increments are made safe (`PARLOOP_STRATEGY`).
    pub strategy: Strategy,
    /// What hierarchical plans stage in workgroup memory (`PARLOOP_STAGING=none|inc|all`).
    pub staging: Staging,
    /// Elements per mini-partition; None derives it from workgroup memory (`PARLOOP_BLOCK_SIZE`).
    pub block_size: Option<usize>,
    /// Least-used colour instead of lowest (`PARLOOP_BALANCE=1`).
    pub balance_colours: bool,
    /// Pending loops beyond which the oldest half runs (`PARLOOP_TRACE_BOUND`, default 100).
    pub trace_bound: usize,
    /// Invocations per workgroup: 1 up to the adapter's limit (256 in WebGPU), any size; a
    /// Context with a size outside that range is refused (`PARLOOP_WORKGROUP_SIZE`).
    pub workgroup_size: u32,
    /// `PARLOOP_ADAPTER=hardware|software|<name>`.
    pub adapter: AdapterChoice,
    /// Time each loop group on the GPU with timestamp queries (`PARLOOP_PROFILE=1`); costs a
    /// compute pass per group and a readback per force.
    pub profile: bool,
    /// Checking mode (`PARLOOP_CHECK=1`): every dynamic index a GPU kernel applies to one of
    /// its arguments is checked on the device, and a force whose loops indexed out of range
    /// returns [`Error::Check`] naming the par_loop, argument, element, index and bound. Costs
    /// a guard per index and a readback per force; off by default.
    pub check: bool,
    /// Struct-of-arrays layout on the device for Dats of dim > 1 (`PARLOOP_SOA=1`; OP2's SoA on
    /// GPUs): value k of element e at k x n + e (n: the set's stored elements), so that
    /// neighbouring invocations read neighbouring words. Kernels still see `array<T, dim>`;
    /// host copies stay array-of-structs (transposed on upload and readback).
    pub soa: bool,
    /// Caps the workgroups per grid dimension below the adapter's limit (65535 on most), so
    /// that tests reach 2-D grids and their idle workgroups on small meshes. None: the
    /// adapter's limit.
    pub grid_limit: Option<u32>,
    /// On N ranks: seconds a rank waits for the others (a message, a reduction, an agreement)
    /// before the job is aborted with a message naming the rank and what it waited in
    /// (`PARLOOP_COMM_TIMEOUT`, default 600): a diverged program fails instead of hanging.
    pub comm_timeout_s: f64,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            lazy: true,
            fusion: true,
            strategy: Strategy::Auto,
            staging: Staging::Inc,
            block_size: None,
            balance_colours: false,
            trace_bound: 100,
            workgroup_size: 64,
            adapter: AdapterChoice::Auto,
            profile: false,
            check: false,
            soa: false,
            grid_limit: None,
            comm_timeout_s: DEFAULT_COMM_TIMEOUT_S,
        }
    }
}

/// Every variable parloop reads, with what it accepts (for messages).
pub const VARIABLES: &[(&str, &str)] = &[
    ("PARLOOP_LAZY", "0 or 1"),
    ("PARLOOP_FUSION", "0 or 1"),
    (
        "PARLOOP_STRATEGY",
        // Strategy::names(), as a constant (a test checks they agree).
        "auto, hierarchical, global-colour, atomics, cas or staged",
    ),
    ("PARLOOP_STAGING", "none, inc or all"),
    ("PARLOOP_BLOCK_SIZE", "a positive integer"),
    ("PARLOOP_BALANCE", "0 or 1"),
    ("PARLOOP_TRACE_BOUND", "a positive integer"),
    ("PARLOOP_WORKGROUP_SIZE", "a positive integer"),
    ("PARLOOP_PROFILE", "0 or 1"),
    ("PARLOOP_CHECK", "0 or 1"),
    ("PARLOOP_SOA", "0 or 1"),
    ("PARLOOP_COMM_TIMEOUT", "a positive number of seconds"),
    (
        "PARLOOP_ADAPTER",
        "auto, hardware, software or part of an adapter's name",
    ),
    (
        "PARLOOP_BACKEND",
        "vulkan, gl, dx12 or metal (comma-separated)",
    ),
];

fn bad(name: &str, value: &str) -> Error {
    let accepted = VARIABLES
        .iter()
        .find(|(n, _)| *n == name)
        .map_or("", |(_, a)| a);
    Error::Usage(format!(
        "{name}={value:?} is not a valid value: {name} accepts {accepted}"
    ))
}

fn flag(name: &str, v: &str) -> Result<bool> {
    match v.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "on" | "yes" => Ok(true),
        "0" | "false" | "off" | "no" => Ok(false),
        _ => Err(bad(name, v)),
    }
}

fn positive(name: &str, v: &str) -> Result<usize> {
    v.trim()
        .parse::<usize>()
        .ok()
        .filter(|&n| n > 0)
        .ok_or_else(|| bad(name, v))
}

/// The backends `PARLOOP_BACKEND` names, checked.
pub(crate) fn parse_backends(v: &str) -> Result<wgpu::Backends> {
    let mut b = wgpu::Backends::empty();
    for part in v.split(',').map(|p| p.trim().to_ascii_lowercase()) {
        b |= match part.as_str() {
            "vulkan" | "vk" => wgpu::Backends::VULKAN,
            "gl" | "gles" | "opengl" => wgpu::Backends::GL,
            "dx12" | "d3d12" => wgpu::Backends::DX12,
            "metal" | "mtl" => wgpu::Backends::METAL,
            "webgpu" => wgpu::Backends::BROWSER_WEBGPU,
            _ => return Err(bad("PARLOOP_BACKEND", v)),
        };
    }
    Ok(b)
}

impl Config {
    /// Defaults overridden by the `PARLOOP_*` environment variables. An unknown `PARLOOP_*`
    /// variable, or a value a variable does not accept, is an error listing what is accepted.
    ///
    /// ```
    /// use parloop::{Config, Context, Strategy};
    /// # fn main() -> parloop::Result<()> {
    /// // The environment's choices, then the program's: here eager mode and global colouring.
    /// let config = Config {
    ///     lazy: false,
    ///     strategy: Strategy::GlobalColour,
    ///     ..Config::from_env()?
    /// };
    /// let ctx = Context::with_config(config)?;
    /// assert!(!ctx.config().lazy);
    /// # Ok(())
    /// # }
    /// ```
    pub fn from_env() -> Result<Config> {
        Config::from_vars(std::env::vars())
    }

    /// Command-line flags on top of this configuration (the examples' `--strategy`, `--mode`,
    /// `--no-fusion`): a flag given overrides, a flag left out keeps what the environment said.
    pub fn with_flags(
        mut self,
        strategy: Option<&str>,
        lazy: Option<bool>,
        no_fusion: bool,
    ) -> Result<Config> {
        if let Some(s) = strategy {
            self.strategy = Strategy::parse(s).ok_or_else(|| {
                Error::Usage(format!("unknown strategy {s:?}: use {}", Strategy::names()))
            })?;
        }
        self.lazy = lazy.unwrap_or(self.lazy);
        self.fusion &= !no_fusion;
        Ok(self)
    }

    /// [`Config::from_env`] on given variables (the ones not starting with `PARLOOP_` are
    /// ignored).
    pub fn from_vars(vars: impl IntoIterator<Item = (String, String)>) -> Result<Config> {
        let mut c = Config::default();
        for (name, v) in vars {
            if !name.starts_with("PARLOOP_") || v.trim().is_empty() {
                continue;
            }
            let n = name.as_str();
            match n {
                "PARLOOP_LAZY" => c.lazy = flag(n, &v)?,
                "PARLOOP_FUSION" => c.fusion = flag(n, &v)?,
                "PARLOOP_STRATEGY" => c.strategy = Strategy::parse(&v).ok_or_else(|| bad(n, &v))?,
                "PARLOOP_STAGING" => {
                    c.staging = match v.trim() {
                        "none" => Staging::None,
                        "inc" => Staging::Inc,
                        "all" => Staging::All,
                        _ => return Err(bad(n, &v)),
                    }
                }
                "PARLOOP_BLOCK_SIZE" => c.block_size = Some(positive(n, &v)?),
                "PARLOOP_BALANCE" => c.balance_colours = flag(n, &v)?,
                "PARLOOP_TRACE_BOUND" => c.trace_bound = positive(n, &v)?,
                "PARLOOP_WORKGROUP_SIZE" => {
                    c.workgroup_size = u32::try_from(positive(n, &v)?).map_err(|_| bad(n, &v))?
                }
                "PARLOOP_PROFILE" => c.profile = flag(n, &v)?,
                "PARLOOP_CHECK" => c.check = flag(n, &v)?,
                "PARLOOP_SOA" => c.soa = flag(n, &v)?,
                "PARLOOP_COMM_TIMEOUT" => {
                    c.comm_timeout_s = v
                        .trim()
                        .parse::<f64>()
                        .ok()
                        .filter(|s| s.is_finite() && *s > 0.0)
                        .ok_or_else(|| bad(n, &v))?
                }
                "PARLOOP_ADAPTER" => c.adapter = AdapterChoice::parse(&v),
                "PARLOOP_BACKEND" => {
                    parse_backends(&v)?;
                }
                _ => {
                    let known: Vec<&str> = VARIABLES.iter().map(|(n, _)| *n).collect();
                    return Err(Error::Usage(format!(
                        "unknown environment variable {name}: parloop reads {}",
                        known.join(", ")
                    )));
                }
            }
        }
        Ok(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_strategy_and_variant_is_named_once_and_parses_back() {
        let accepted = VARIABLES.iter().find(|(n, _)| *n == "PARLOOP_STRATEGY");
        assert_eq!(accepted.map(|a| a.1.to_string()), Some(Strategy::names()));
        for s in Strategy::ALL {
            assert_eq!(Strategy::parse(s.name()), Some(s));
        }
        let mut names: Vec<&str> = Variant::ALL.iter().map(|v| v.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), Variant::ALL.len());
        // Every strategy but `auto` (which is one of them) is in the list, `auto` is not.
        for s in Strategy::ALL {
            let listed = Variant::ALL.iter().any(|v| v.strategy == s);
            assert_eq!(listed, s != Strategy::Auto, "{s:?}");
        }
        assert_eq!(Variant::available(false).count(), Variant::ALL.len() - 1);
    }

    fn vars(pairs: &[(&str, &str)]) -> Result<Config> {
        Config::from_vars(pairs.iter().map(|(a, b)| (a.to_string(), b.to_string())))
    }

    #[test]
    fn values_are_validated_with_the_accepted_ones_listed() {
        let c = vars(&[
            ("PARLOOP_STRATEGY", "cas"),
            ("PARLOOP_LAZY", "0"),
            ("HOME", "/"),
        ])
        .unwrap();
        assert_eq!((c.strategy, c.lazy), (Strategy::Cas, false));
        let e = vars(&[("PARLOOP_STRATEGY", "atomic")])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("\"atomic\"") && e.contains("global-colour"),
            "{e}"
        );
        let e = vars(&[("PARLOOP_LAZY", "maybe")]).unwrap_err().to_string();
        assert!(e.contains("PARLOOP_LAZY") && e.contains("0 or 1"), "{e}");
        let e = vars(&[("PARLOOP_BLOCK_SIZE", "0")])
            .unwrap_err()
            .to_string();
        assert!(e.contains("positive"), "{e}");
        let e = vars(&[("PARLOOP_STRATEGIE", "cas")])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("unknown") && e.contains("PARLOOP_STRATEGY"),
            "{e}"
        );
        let e = vars(&[("PARLOOP_BACKEND", "vulcan")])
            .unwrap_err()
            .to_string();
        assert!(e.contains("vulkan, gl"), "{e}");
        // Flags override the environment only where given.
        let env = vars(&[("PARLOOP_STRATEGY", "cas"), ("PARLOOP_LAZY", "0")]).unwrap();
        let c = env.clone().with_flags(None, None, true).unwrap();
        assert_eq!(
            (c.strategy, c.lazy, c.fusion),
            (Strategy::Cas, false, false)
        );
        let c = env.with_flags(Some("atomics"), Some(true), false).unwrap();
        assert_eq!(
            (c.strategy, c.lazy, c.fusion),
            (Strategy::Atomics, true, true)
        );
        let e = Config::default()
            .with_flags(Some("atomic"), None, false)
            .unwrap_err();
        assert!(e.to_string().contains("global-colour"), "{e}");
    }
}
