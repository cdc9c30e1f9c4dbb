//! The racing-increment strategies a user picks: `Strategy` (the names `PARLOOP_STRATEGY`
//! reads), `Variant` (a strategy with its staging: the one list the tests, fuzzers and
//! `parloop bench` iterate) and `Staging`.

/// How racing increments (INC/MIN/MAX through a map) are made safe.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Strategy {
    /// `atomics` on GPUs with native f32 atomics, else `global-colour` (CPU adapters,
    /// adapters without float atomics, f64), unless the colouring needs many small colours
    /// (`Config::min_colour_size`; a quarter of it where compare-and-swap would run): then
    /// atomics, native or compare-and-swap, where the adapter can run them. ARCHITECTURE.md
    /// has the measurements behind these choices.
    #[default]
    Auto,
    /// Coloured mini-partitions, one per workgroup, with staging.
    Hierarchical,
    /// One-level element colouring, one dispatch per colour.
    GlobalColour,
    /// Native f32 atomics (adapters with SHADER_FLOAT32_ATOMIC); f32 min/max and f64 by
    /// compare-and-swap, f64 only on adapters with 64-bit integer atomics
    /// (`Gpu::int64_atomics`).
    Atomics,
    /// Compare-and-swap on bit patterns: u32 for f32 (every adapter), u64 for f64 (adapters
    /// with 64-bit integer atomics).
    Cas,
    /// Mini-partitions (one per workgroup) whose increments are combined in workgroup memory
    /// with workgroup atomics (compare-and-swap on the bit patterns of floats; f64 only with
    /// 64-bit integer atomics), no thread colours; block colours for the write to global
    /// memory. Needs no float atomics.
    Staged,
    /// Measured on the adapter at hand: the first executions of each loop group with racing
    /// increments try every legal strategy (then workgroup sizes for the best), and those of
    /// a group reducing into Globals caps on its workgroups; timed with GPU
    /// timestamps where the adapter has them and a synchronised wall clock otherwise, and the
    /// fastest is kept. Choices are cached per adapter, group and size class
    /// (`Config::tune_cache`), so a second run starts tuned. `Context::tuning` and `explain()`
    /// say what was tried and chosen. In a browser without timestamp queries (where a force
    /// cannot wait for a wall clock) it runs `auto`'s choice.
    Tune,
}

impl Strategy {
    /// Every strategy, `auto` first: parsing, the messages that list the accepted names and
    /// [`Variant::ALL`] follow this list.
    pub const ALL: [Strategy; 7] = [
        Strategy::Auto,
        Strategy::Hierarchical,
        Strategy::GlobalColour,
        Strategy::Atomics,
        Strategy::Cas,
        Strategy::Staged,
        Strategy::Tune,
    ];

    /// Reads `PARLOOP_STRATEGY`'s syntax: a name of [`Strategy::ALL`] (`auto`, `hierarchical`,
    /// `global-colour`, `atomics`, `cas`, `staged`, `tune`), or `global-color`, `colour`, `color`.
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
            Strategy::Tune => "tune",
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
            | Strategy::Staged
            | Strategy::Tune => false,
        }
    }
    /// Whether it can apply f64 increments through maps on an adapter with (or without)
    /// 64-bit integer atomics (`Gpu::int64_atomics`): the colouring strategies always can;
    /// `atomics`, `cas` and `staged` only by compare-and-swap on `atomic<u64>`, where the
    /// adapter has it. (`tune` tries only what the adapter can run.)
    pub fn takes_f64(self, int64_atomics: bool) -> bool {
        match self {
            Strategy::Auto | Strategy::Hierarchical | Strategy::GlobalColour | Strategy::Tune => {
                true
            }
            Strategy::Atomics | Strategy::Cas | Strategy::Staged => int64_atomics,
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
    pub const ALL: [Variant; 8] = [
        Variant::new(Strategy::Hierarchical, Staging::Inc),
        Variant::new(Strategy::Hierarchical, Staging::All),
        Variant::new(Strategy::Hierarchical, Staging::None),
        Variant::new(Strategy::GlobalColour, Staging::Inc),
        Variant::new(Strategy::Cas, Staging::Inc),
        Variant::new(Strategy::Atomics, Staging::Inc),
        Variant::new(Strategy::Staged, Staging::Inc),
        Variant::new(Strategy::Tune, Staging::Inc),
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
                | Strategy::Staged
                | Strategy::Tune,
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
            (Strategy::Tune, _) => "tune (measured)",
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
