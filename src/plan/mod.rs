//! Execution plans for loops with racing arguments: how an iteration space is cut into
//! mini-partitions (one per workgroup), renumbered locally for staging in workgroup memory, and
//! coloured at two levels so that no two concurrently applied increments touch the same entry.
//! Also the one-level element colouring of the `global-colour` strategy.

mod colour;

use colour::{Entry, greedy, masks};

/// Words of the plan header (offsets of the plan arrays) before the staged maps' entries.
pub const PLAN_HEADER_FIXED: usize = 6;
/// Plan header entries per staged map.
pub const PLAN_HEADER_PER_MAP: usize = 3;

/// One racing argument: increments through `map` (at index `idx`, or all indices) into
/// `space` (one space per racing Dat).
#[derive(Clone, Copy, Debug)]
pub struct RaceArg<'a> {
    /// The racing Dat's space (index into [`PlanInput::space_sizes`]).
    pub space: usize,
    /// The map's targets, `arity` per element.
    pub map: &'a [u32],
    /// Targets per element.
    pub arity: usize,
    /// The map index the increments go through; None: all of them.
    pub idx: Option<usize>,
    /// The staged map (index into [`PlanInput::staged`]) the increments are gathered through,
    /// if any. A block's stage-out writes every target it staged through that map, so those
    /// targets join the block's footprint for block colouring.
    pub staged: Option<usize>,
}

/// A map whose targets a block stages in workgroup memory.
#[derive(Clone, Copy, Debug)]
pub struct StagedMap<'a> {
    /// The map's targets, `arity` per element.
    pub map: &'a [u32],
    /// Targets per element.
    pub arity: usize,
    /// Workgroup bytes per distinct target (sum of 4 x dim of the Dats staged through it).
    pub bytes_per_target: usize,
    /// The map indices staged, ascending; None: all of them. Only these targets are staged,
    /// so only these indices may be looked up through the local numbering.
    pub slots: Option<&'a [usize]>,
}

impl StagedMap<'_> {
    /// Map indices staged per element.
    pub fn slots_per_element(&self) -> usize {
        self.slots.map_or(self.arity, <[usize]>::len)
    }
    /// Calls f with each staged target of element e.
    fn each_target(&self, e: usize, mut f: impl FnMut(u32)) {
        let row = &self.map[e * self.arity..(e + 1) * self.arity];
        match self.slots {
            Some(slots) => slots.iter().for_each(|&j| f(row[j])),
            None => row.iter().for_each(|&t| f(t)),
        }
    }
}

/// The loop a plan is for.
#[derive(Clone, Debug)]
pub struct PlanInput<'a> {
    /// Iteration positions.
    pub positions: usize,
    /// Element of each position (a subset); None: position = element.
    pub elements: Option<&'a [u32]>,
    /// Position boundaries no block may straddle (section ends), ascending, ending at positions.
    pub section_ends: Vec<usize>,
    /// Entries per space (size of each racing Dat's set).
    pub space_sizes: Vec<usize>,
    /// The racing arguments (their targets must not collide within a colour).
    pub races: Vec<RaceArg<'a>>,
    /// The maps whose targets blocks stage in workgroup memory.
    pub staged: Vec<StagedMap<'a>>,
}

/// Knobs of the hierarchical plan.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PlanConfig {
    /// Workgroup memory available for staging, in bytes.
    pub workgroup_memory: usize,
    /// Elements per block; None derives it from the staged bytes (OP2's formula).
    pub block_size: Option<usize>,
    /// Pick the least-used allowed colour instead of the lowest.
    pub balance: bool,
}

impl Default for PlanConfig {
    fn default() -> Self {
        PlanConfig {
            workgroup_memory: 16 * 1024 - 2048,
            block_size: None,
            balance: false,
        }
    }
}

impl PlanInput<'_> {
    fn element(&self, p: usize) -> usize {
        self.elements.map_or(p, |e| e[p] as usize)
    }
    /// The racing entries of position p.
    fn entries(&self, p: usize, out: &mut Vec<Entry>) {
        let e = self.element(p);
        for r in &self.races {
            match r.idx {
                Some(j) => out.push((r.space, r.map[e * r.arity + j])),
                None => out.extend(
                    r.map[e * r.arity..(e + 1) * r.arity]
                        .iter()
                        .map(|&t| (r.space, t)),
                ),
            }
        }
    }
}

/// One-level colouring: positions sorted by colour (stable), one dispatch per colour.
#[derive(Clone, Debug)]
pub struct ColourPlan {
    /// Elements in colour order.
    pub elem: Vec<u32>,
    /// Colour c covers `elem[offsets[c]..offsets[c + 1]]`.
    pub offsets: Vec<usize>,
}

impl ColourPlan {
    /// Number of colours (one dispatch each).
    pub fn colours(&self) -> usize {
        self.offsets.len() - 1
    }
}

/// Greedy one-level colouring of the positions: no two positions of a colour share a racing target (with `balance`, each position takes the least-used allowed colour).
pub fn colour_elements(input: &PlanInput, balance: bool) -> ColourPlan {
    let mut m = masks(&input.space_sizes);
    let (col, n) = greedy(input.positions, &mut m, balance, |p, out| {
        input.entries(p, out)
    });
    let (order, offsets) = counting_sort(&col, n as usize);
    ColourPlan {
        elem: order.iter().map(|&p| input.element(p) as u32).collect(),
        offsets,
    }
}

/// The most positions that increment one entry: a colouring needs at least this many colours
/// (a position naming an entry twice counts once). O(positions x arity), far less than the
/// colouring itself when the answer is large.
pub fn most_increments(input: &PlanInput) -> usize {
    let mut counts: Vec<Vec<u32>> = input.space_sizes.iter().map(|&n| vec![0; n]).collect();
    let mut buf = Vec::new();
    let mut most = 0;
    for p in 0..input.positions {
        buf.clear();
        input.entries(p, &mut buf);
        buf.sort_unstable();
        buf.dedup();
        for &(s, t) in &buf {
            let c = &mut counts[s][t as usize];
            *c += 1;
            most = most.max(*c as usize);
        }
    }
    most
}

/// Stable sort of indices by key; returns the order and the start offset of each key.
fn counting_sort(keys: &[u32], nkeys: usize) -> (Vec<usize>, Vec<usize>) {
    let mut offsets = vec![0usize; nkeys + 1];
    for &k in keys {
        offsets[k as usize + 1] += 1;
    }
    for c in 0..nkeys {
        offsets[c + 1] += offsets[c];
    }
    let mut next = offsets.clone();
    let mut order = vec![0usize; keys.len()];
    for (i, &k) in keys.iter().enumerate() {
        order[next[k as usize]] = i;
        next[k as usize] += 1;
    }
    (order, offsets)
}

/// Local renumbering of one staged map.
#[derive(Clone, Debug, Default)]
pub struct StagedPlan {
    /// Block b's distinct targets are `l2g[l2g_offsets[b]..l2g_offsets[b + 1]]`, sorted.
    pub l2g_offsets: Vec<u32>,
    /// The distinct targets of all blocks, block by block.
    pub l2g: Vec<u32>,
    /// For position p (plan order) and map index j: the local index of its target.
    pub g2l: Vec<u32>,
    /// The most distinct targets in one block.
    pub maxu: usize,
}

/// The hierarchical plan: blocks (one per workgroup), thread colours inside each block, block
/// colours across blocks, local renumbering of staged maps.
#[derive(Clone, Debug)]
pub struct BlockPlan {
    /// Positions per block (the last block of a section may have fewer).
    pub block_size: usize,
    /// Block b covers plan positions `block_offsets[b]..block_offsets[b + 1]`.
    pub block_offsets: Vec<u32>,
    /// Element at each plan position (positions are sorted by thread colour within a block).
    pub elem: Vec<u32>,
    /// Thread colour at each plan position.
    pub thread_colour: Vec<u32>,
    /// Thread colours of each block.
    pub block_ncolours: Vec<u32>,
    /// Block b's thread colour c covers positions `colour_ranges[colour_base[b] + c]` to
    /// `colour_ranges[colour_base[b] + c + 1]` (positions are sorted by colour in a block).
    pub colour_base: Vec<u32>,
    /// Position ranges of the thread colours (see `colour_base`).
    pub colour_ranges: Vec<u32>,
    /// Block colour of each block.
    pub block_colour: Vec<u32>,
    /// Blocks in block-colour order; colour c covers `block_order[colour_offsets[c]..colour_offsets[c + 1]]`.
    pub block_order: Vec<u32>,
    /// Start of each block colour in `block_order`, and the end.
    pub colour_offsets: Vec<usize>,
    /// Local renumbering of each staged map.
    pub staged: Vec<StagedPlan>,
}

/// Why a plan cannot be built.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PlanError {
    /// Even a single element stages more than the workgroup memory allows.
    /// Bytes one element stages and the workgroup memory available.
    ElementTooLarge {
        /// Bytes one element stages.
        bytes: usize,
        /// Workgroup bytes available.
        limit: usize,
    },
}

impl BlockPlan {
    /// Number of blocks (workgroups).
    pub fn blocks(&self) -> usize {
        self.block_offsets.len() - 1
    }
    /// Number of block colours (dispatches).
    pub fn block_colours(&self) -> usize {
        self.colour_offsets.len() - 1
    }
    /// Workgroup bytes the largest block stages.
    pub fn staged_bytes(&self, input: &PlanInput) -> usize {
        self.staged
            .iter()
            .zip(&input.staged)
            .map(|(s, m)| s.maxu * m.bytes_per_target)
            .sum()
    }
    /// All arrays in one u32 buffer, behind a header of offsets (see codegen's plan header).
    pub fn pack(&self) -> Vec<u32> {
        let header = PLAN_HEADER_FIXED + PLAN_HEADER_PER_MAP * self.staged.len();
        let mut out = vec![0u32; header];
        let push = |out: &mut Vec<u32>, slot: usize, data: &[u32]| {
            out[slot] = out.len() as u32;
            out.extend_from_slice(data);
        };
        push(&mut out, 0, &self.block_offsets);
        push(&mut out, 1, &self.elem);
        push(&mut out, 2, &self.colour_base);
        push(&mut out, 3, &self.block_ncolours);
        push(&mut out, 4, &self.block_order);
        push(&mut out, 5, &self.colour_ranges);
        for (s, sp) in self.staged.iter().enumerate() {
            let base = PLAN_HEADER_FIXED + PLAN_HEADER_PER_MAP * s;
            push(&mut out, base, &sp.l2g_offsets);
            push(&mut out, base + 1, &sp.l2g);
            push(&mut out, base + 2, &sp.g2l);
        }
        out
    }
}

/// OP2's block size, adapted: as many multiples of 64 elements as fit the staged bytes of an
/// element (assuming no reuse), at least 64 and at most 1024.
pub fn default_block_size(input: &PlanInput, workgroup_memory: usize) -> usize {
    let per_element: usize = input
        .staged
        .iter()
        .map(|m| m.bytes_per_target * m.slots_per_element())
        .sum();
    if per_element == 0 {
        return 256;
    }
    ((workgroup_memory / (64 * per_element)) * 64).clamp(64, 1024)
}

/// Builds the hierarchical plan. Blocks shrink (halving) until every block's staged data fits.
pub fn build_blocks(input: &PlanInput, config: &PlanConfig) -> Result<BlockPlan, PlanError> {
    let mut size = config
        .block_size
        .unwrap_or_else(|| default_block_size(input, config.workgroup_memory))
        .max(1);
    loop {
        let plan = build_with_size(input, config, size);
        let bytes = plan.staged_bytes(input);
        if bytes <= config.workgroup_memory || input.staged.is_empty() {
            return Ok(plan);
        }
        if size == 1 {
            return Err(PlanError::ElementTooLarge {
                bytes,
                limit: config.workgroup_memory,
            });
        }
        size = (size / 2).max(1);
    }
}

fn build_with_size(input: &PlanInput, config: &PlanConfig, size: usize) -> BlockPlan {
    // Blocks: contiguous runs of positions that never straddle a section end.
    let mut starts = Vec::new();
    let mut begin = 0usize;
    for &end in input
        .section_ends
        .iter()
        .chain(std::iter::once(&input.positions))
    {
        let end = end.min(input.positions);
        while begin < end {
            starts.push(begin);
            begin = (begin + size).min(end);
        }
    }
    let nblocks = starts.len();
    let bounds = |b: usize| {
        (
            starts[b],
            starts.get(b + 1).copied().unwrap_or(input.positions),
        )
    };

    // Thread colours inside each block; positions reordered by colour.
    let mut elem = Vec::with_capacity(input.positions);
    let mut thread_colour = Vec::with_capacity(input.positions);
    let mut block_ncolours = Vec::with_capacity(nblocks);
    let mut colour_base = Vec::with_capacity(nblocks + 1);
    let mut colour_ranges = Vec::new();
    let mut m = masks(&input.space_sizes);
    let mut block_entries: Vec<Vec<Entry>> = Vec::with_capacity(nblocks);
    for b in 0..nblocks {
        let (lo, hi) = bounds(b);
        let (col, n) = greedy(hi - lo, &mut m, config.balance, |i, out| {
            input.entries(lo + i, out)
        });
        let (order, offs) = counting_sort(&col, n as usize);
        colour_base.push(colour_ranges.len() as u32);
        colour_ranges.extend(offs.iter().map(|&o| (lo + o) as u32));
        for &i in &order {
            elem.push(input.element(lo + i) as u32);
            thread_colour.push(col[i]);
        }
        block_ncolours.push(n);
        // The footprint: the racing entries, and every target the block's stage-out writes
        // (a staged map may stage more indices than the increments go through).
        let mut fp = Vec::new();
        for p in lo..hi {
            input.entries(p, &mut fp);
            let e = input.element(p);
            for r in &input.races {
                if let Some(k) = r.staged {
                    input.staged[k].each_target(e, |t| fp.push((r.space, t)));
                }
            }
        }
        fp.sort_unstable();
        fp.dedup();
        block_entries.push(fp);
    }
    // Block colours.
    colour_base.push(colour_ranges.len() as u32);
    let (block_colour, nbc) = greedy(nblocks, &mut m, config.balance, |b, out| {
        out.extend_from_slice(&block_entries[b])
    });
    let (order, colour_offsets) = counting_sort(&block_colour, nbc as usize);
    let block_offsets: Vec<u32> = (0..=nblocks)
        .map(|b| if b == nblocks { input.positions } else { starts[b] } as u32)
        .collect();
    // Local renumbering of each staged map, in plan order.
    let staged = input
        .staged
        .iter()
        .map(|m| renumber(m, &elem, &block_offsets))
        .collect();
    BlockPlan {
        block_size: size,
        block_offsets,
        elem,
        thread_colour,
        block_ncolours,
        colour_base,
        colour_ranges,
        block_colour,
        block_order: order.iter().map(|&b| b as u32).collect(),
        colour_offsets,
        staged,
    }
}

fn renumber(m: &StagedMap, elem: &[u32], block_offsets: &[u32]) -> StagedPlan {
    let nblocks = block_offsets.len() - 1;
    let mut sp = StagedPlan {
        l2g_offsets: Vec::with_capacity(nblocks + 1),
        l2g: Vec::new(),
        g2l: vec![0; elem.len() * m.arity],
        maxu: 0,
    };
    let mut local: Vec<u32> = Vec::new();
    sp.l2g_offsets.push(0);
    for b in 0..nblocks {
        let (lo, hi) = (block_offsets[b] as usize, block_offsets[b + 1] as usize);
        local.clear();
        for &e in &elem[lo..hi] {
            m.each_target(e as usize, |t| local.push(t));
        }
        local.sort_unstable();
        local.dedup();
        for p in lo..hi {
            let e = elem[p] as usize;
            for j in 0..m.arity {
                let t = m.map[e * m.arity + j];
                // Present by construction for staged indices; 0 (never read) for the others.
                sp.g2l[p * m.arity + j] = local.binary_search(&t).unwrap_or(0) as u32;
            }
        }
        sp.maxu = sp.maxu.max(local.len());
        sp.l2g.extend_from_slice(&local);
        sp.l2g_offsets.push(sp.l2g.len() as u32);
    }
    sp
}

#[cfg(test)]
mod tests;

/// Statistics of a hierarchical plan (for `parloop plan` and the benchmarks).
#[derive(Clone, Debug)]
pub struct BlockStats {
    /// Number of blocks.
    pub blocks: usize,
    /// Positions per block.
    pub block_size: usize,
    /// Number of block colours.
    pub block_colours: usize,
    /// The most thread colours in one block.
    pub thread_colours_max: u32,
    /// Thread colours per block, on average.
    pub thread_colours_mean: f64,
    /// The most workgroup bytes one block stages.
    pub staged_bytes_max: usize,
    /// Workgroup bytes staged per block, on average.
    pub staged_bytes_mean: f64,
}

impl BlockPlan {
    /// The plan's statistics for `input`.
    pub fn stats(&self, input: &PlanInput) -> BlockStats {
        let nb = self.blocks().max(1);
        let per_block: Vec<usize> = (0..self.blocks())
            .map(|b| {
                self.staged
                    .iter()
                    .zip(&input.staged)
                    .map(|(s, m)| {
                        (s.l2g_offsets[b + 1] - s.l2g_offsets[b]) as usize * m.bytes_per_target
                    })
                    .sum()
            })
            .collect();
        BlockStats {
            blocks: self.blocks(),
            block_size: self.block_size,
            block_colours: self.block_colours(),
            thread_colours_max: self.block_ncolours.iter().copied().max().unwrap_or(0),
            thread_colours_mean: self.block_ncolours.iter().map(|&c| c as f64).sum::<f64>()
                / nb as f64,
            staged_bytes_max: per_block.iter().copied().max().unwrap_or(0),
            staged_bytes_mean: per_block.iter().sum::<usize>() as f64 / nb as f64,
        }
    }
}
