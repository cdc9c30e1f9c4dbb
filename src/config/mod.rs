//! How a context runs its loops, and the `PARLOOP_*` environment variables every program reads.
//! Each variable is validated: an unknown variable or value is an error that lists what is
//! accepted, never a silent default.

mod strategy;

pub use strategy::{Staging, Strategy, Variant};

use crate::error::{Error, Result};
use std::path::PathBuf;

/// Where [`Strategy::Tune`] keeps its choices between runs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum TuneCache {
    /// `parloop/tune.json` in the user's cache directory (`$XDG_CACHE_HOME` or `~/.cache` on
    /// Linux, `~/Library/Caches` on macOS, `%LOCALAPPDATA%` on Windows); in memory only in
    /// the browser, where the page keeps `Context::tune_cache_json` in its storage.
    #[default]
    User,
    /// In memory only: every run tunes again.
    Off,
    /// This file.
    File(PathBuf),
}

impl Config {
    /// Whether loop groups are timed (`profile`, `profile_table` or `trace`).
    pub fn times_groups(&self) -> bool {
        self.profile || self.profile_table || self.trace.is_some()
    }
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

/// [`Config::min_colour_size`]'s default: on lavapipe a colouring of 1,000 positions per colour
/// ran 2.4 to 3.2x slower than `auto` with native f32 atomics, one of 2,765 (a small
/// tetrahedral mesh) 1.8 to 3.9x slower, and around 3,300 the ranking changed from run to run;
/// histograms of 10,000 positions per colour ran as fast or faster coloured (BENCHMARKS.md,
/// "Contention"). A dispatch of fewer invocations is a few dozen workgroups, far from filling
/// a GPU.
pub const DEFAULT_MIN_COLOUR_SIZE: usize = 4096;

/// `auto` keeps a colouring of this many colours or fewer whatever their size
/// ([`Config::min_colour_size`]): a few dispatches cost little, and the sums stay the same
/// from run to run.
pub const AUTO_FEW_COLOURS: usize = 16;

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
    /// Invocations per workgroup: 1 up to the adapter's limit (256 in WebGPU); a Context with
    /// a size outside that range is refused (`PARLOOP_WORKGROUP_SIZE`). `hierarchical` takes
    /// multiples of 8 only (its loops refuse others).
    pub workgroup_size: u32,
    /// `PARLOOP_ADAPTER=hardware|software|<name>`.
    pub adapter: AdapterChoice,
    /// The graphics APIs searched for an adapter (`PARLOOP_BACKEND=vulkan|gl|metal|dx12`, or
    /// several comma-separated); None: every native one (WebGPU in the browser).
    pub backends: Option<wgpu::Backends>,
    /// Time each loop group with GPU timestamp queries where the adapter has them
    /// (`PARLOOP_PROFILE=1`, [`Stats::kernel_times`]; a compute pass per group and a readback
    /// per force). `profile_table` and `trace` time groups too, and where the adapter has no
    /// timestamps they use a synchronised wall clock (each group submitted alone and waited
    /// for).
    ///
    /// [`Stats::kernel_times`]: crate::Stats::kernel_times
    pub profile: bool,
    /// At the end of the Context, an OP2-style table on standard error: per loop group,
    /// calls, total and mean time, GB/s and share of the run (`PARLOOP_PROFILE=table`;
    /// `Context::profile_table` gives it, over every rank, at any time, and then it is not
    /// printed again at the end).
    pub profile_table: bool,
    /// Write a timeline (Chrome trace / Perfetto JSON) to this file when the Context ends
    /// (`PARLOOP_PROFILE=trace:PATH`; on N ranks each rank writes `PATH` with `.rank<r>`
    /// before its extension). `Context::write_trace` writes one at any time.
    pub trace: Option<PathBuf>,
    /// Where [`Strategy::Tune`] keeps its choices between runs (`PARLOOP_TUNE_CACHE=off` or a
    /// path).
    pub tune_cache: TuneCache,
    /// Time groups (profiling, `tune`) with GPU timestamp queries where the adapter has them
    /// (default); false uses a synchronised wall clock everywhere (each timed group submitted
    /// alone and waited for), for drivers whose timestamps are not to be trusted.
    pub gpu_timestamps: bool,
    /// Timed executions of each candidate before [`Strategy::Tune`] compares them (the median
    /// counts); 0 counts as 1.
    pub tune_reps: usize,
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
    /// The most workgroups one dispatch of a loop group that reduces into Globals runs
    /// (`PARLOOP_REDUCTION_WORKGROUPS`): each workgroup folds a contiguous chunk of the set
    /// into its invocations' accumulators before its tree, so a large set pays for a bounded
    /// number of trees, not one per workgroup of elements. None (default): 64 on
    /// a CPU adapter (where a workgroup barrier is costly), 4096 on a GPU (enough workgroups
    /// to fill one). Some(0) counts as 1. Under `Strategy::Tune` this is the first cap tried;
    /// the one measured fastest (or kept in the tune cache) replaces it.
    pub reduction_workgroups: Option<u32>,
    /// Where [`Strategy::Auto`] colours a loop (and `Strategy::Tune` in a browser without
    /// timestamps, which runs `auto`'s choice): the fewest positions a colour must hold on
    /// average for a colouring of more than 16 colours to be kept (`PARLOOP_MIN_COLOUR_SIZE`,
    /// default 4096). Each colour is a dispatch, and a map onto few targets (a histogram's
    /// bins, a small 3-D mesh's vertices, many hub vertices) needs many colours of few
    /// positions each: such a loop runs with native atomics instead where the adapter has them
    /// for its increments (f32 adds). Where it would need compare-and-swap (f64, which needs
    /// 64-bit integer atomics, f32 min/max, f32 on adapters without f32 atomics), the colours
    /// must hold fewer than a quarter of this (1024 by default): a compare-and-swap loop costs
    /// more per increment. `explain()` says what ran and why. Atomics add in no fixed order:
    /// 0 keeps every colouring `auto` makes, and with it sums that are the same from run to
    /// run.
    pub min_colour_size: usize,
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
            backends: None,
            profile: false,
            profile_table: false,
            trace: None,
            tune_cache: TuneCache::User,
            tune_reps: 5,
            gpu_timestamps: true,
            check: false,
            soa: false,
            grid_limit: None,
            reduction_workgroups: None,
            min_colour_size: DEFAULT_MIN_COLOUR_SIZE,
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
        "auto, hierarchical, global-colour, atomics, cas, staged or tune",
    ),
    ("PARLOOP_STAGING", "none, inc or all"),
    ("PARLOOP_BLOCK_SIZE", "a positive integer"),
    ("PARLOOP_BALANCE", "0 or 1"),
    ("PARLOOP_TRACE_BOUND", "a positive integer"),
    ("PARLOOP_WORKGROUP_SIZE", "a positive integer"),
    (
        "PARLOOP_PROFILE",
        "0, 1, table, trace:PATH, or several separated by commas (table,trace:run.json)",
    ),
    (
        "PARLOOP_TUNE_CACHE",
        "off, or the file `tune` keeps its choices in",
    ),
    ("PARLOOP_CHECK", "0 or 1"),
    ("PARLOOP_SOA", "0 or 1"),
    ("PARLOOP_REDUCTION_WORKGROUPS", "a positive integer"),
    ("PARLOOP_MIN_COLOUR_SIZE", "a non-negative integer"),
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
                "PARLOOP_PROFILE" => {
                    for part in v.split(',').map(str::trim).filter(|p| !p.is_empty()) {
                        if let Some(path) = part.strip_prefix("trace:") {
                            if path.trim().is_empty() {
                                return Err(bad(n, &v));
                            }
                            c.trace = Some(PathBuf::from(path.trim()));
                        } else if part.eq_ignore_ascii_case("table") {
                            c.profile_table = true;
                        } else {
                            c.profile = flag(n, part)?;
                        }
                    }
                }
                "PARLOOP_TUNE_CACHE" => {
                    c.tune_cache = match v.trim() {
                        "off" | "0" | "none" => TuneCache::Off,
                        path => TuneCache::File(PathBuf::from(path)),
                    }
                }
                "PARLOOP_CHECK" => c.check = flag(n, &v)?,
                "PARLOOP_SOA" => c.soa = flag(n, &v)?,
                "PARLOOP_MIN_COLOUR_SIZE" => {
                    c.min_colour_size = v.trim().parse().map_err(|_| bad(n, &v))?
                }
                "PARLOOP_REDUCTION_WORKGROUPS" => {
                    c.reduction_workgroups =
                        Some(u32::try_from(positive(n, &v)?).map_err(|_| bad(n, &v))?)
                }
                "PARLOOP_COMM_TIMEOUT" => {
                    c.comm_timeout_s = v
                        .trim()
                        .parse::<f64>()
                        .ok()
                        .filter(|s| s.is_finite() && *s > 0.0)
                        .ok_or_else(|| bad(n, &v))?
                }
                "PARLOOP_ADAPTER" => c.adapter = AdapterChoice::parse(&v),
                "PARLOOP_BACKEND" => c.backends = Some(parse_backends(&v)?),
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
        let c = vars(&[("PARLOOP_MIN_COLOUR_SIZE", "0")]).unwrap();
        assert_eq!(c.min_colour_size, 0);
        assert_eq!(Config::default().min_colour_size, DEFAULT_MIN_COLOUR_SIZE);
        let e = vars(&[("PARLOOP_MIN_COLOUR_SIZE", "-1")])
            .unwrap_err()
            .to_string();
        assert!(e.contains("non-negative"), "{e}");
    }
}
