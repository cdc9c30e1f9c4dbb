//! Plan properties on random maps: a partition of the positions, race-free colours at both
//! levels, inverse local/global numbering, staged bytes within the limit.

use super::*;
use proptest::prelude::*;
use std::collections::HashSet;

#[derive(Debug)]
struct Case {
    n: usize,
    targets: usize,
    arity: usize,
    map: Vec<u32>,
    subset: Option<Vec<u32>>,
    sections: Vec<usize>,
}

fn case() -> impl Strategy<Value = Case> {
    (
        1usize..600,
        1usize..200,
        1usize..5,
        any::<u64>(),
        any::<bool>(),
        0usize..3,
    )
        .prop_map(|(n, targets, arity, seed, sub, nsec)| {
            let mut rng = crate::util::Rng::new(seed);
            let map = (0..n * arity).map(|_| rng.below(targets) as u32).collect();
            let subset = sub.then(|| (0..n as u32).filter(|_| rng.chance(0.7)).collect());
            let len = subset.as_ref().map_or(n, |s: &Vec<u32>| s.len());
            let mut sections: Vec<usize> = (0..nsec).map(|_| rng.below(len + 1)).collect();
            sections.sort_unstable();
            Case {
                n,
                targets,
                arity,
                map,
                subset,
                sections,
            }
        })
}

fn input<'a>(
    c: &'a Case,
    idx: Option<usize>,
    stage: bool,
    slots: Option<&'a [usize]>,
) -> PlanInput<'a> {
    let positions = c.subset.as_ref().map_or(c.n, Vec::len);
    PlanInput {
        positions,
        elements: c.subset.as_deref(),
        section_ends: c.sections.clone(),
        space_sizes: vec![c.targets],
        races: vec![RaceArg {
            space: 0,
            map: &c.map,
            arity: c.arity,
            idx,
            staged: stage.then_some(0),
        }],
        staged: if stage {
            vec![StagedMap {
                map: &c.map,
                arity: c.arity,
                bytes_per_target: 16,
                slots,
            }]
        } else {
            vec![]
        },
    }
}

fn targets_of(c: &Case, e: u32, idx: Option<usize>) -> Vec<u32> {
    let row = &c.map[e as usize * c.arity..(e as usize + 1) * c.arity];
    let mut t = match idx {
        Some(j) => vec![row[j]],
        None => row.to_vec(),
    };
    // An element may hit one target twice: that is sequential in its own thread, not a race.
    t.sort_unstable();
    t.dedup();
    t
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(120))]

    #[test]
    fn hierarchical_plan_is_race_free_and_consistent(c in case(), all in any::<bool>(), balance in any::<bool>(), small in any::<bool>(), stage_all in any::<bool>()) {
        let idx = if all { None } else { Some(c.arity - 1) };
        // The map stages the index the increments use, or all indices (a read through
        // another index, when staging all).
        let last = [c.arity - 1];
        let slots = (!all && !stage_all).then_some(&last[..]);
        let inp = input(&c, idx, true, slots);
        let config = PlanConfig {
            workgroup_memory: if small { 512 } else { 4096 },
            block_size: None,
            balance,
        };
        let plan = build_blocks(&inp, &config).unwrap();
        // Every position's element appears exactly once.
        let mut seen: Vec<u32> = plan.elem.clone();
        seen.sort_unstable();
        let mut want: Vec<u32> = match &c.subset { Some(s) => s.clone(), None => (0..c.n as u32).collect() };
        want.sort_unstable();
        prop_assert_eq!(seen, want);
        // Blocks do not straddle section ends.
        for b in 0..plan.blocks() {
            let (lo, hi) = (plan.block_offsets[b] as usize, plan.block_offsets[b + 1] as usize);
            prop_assert!(lo < hi);
            for &s in &c.sections {
                prop_assert!(!(lo < s && s < hi), "block {}..{} straddles {}", lo, hi, s);
            }
        }
        // Same thread colour inside a block: disjoint targets.
        for b in 0..plan.blocks() {
            let (lo, hi) = (plan.block_offsets[b] as usize, plan.block_offsets[b + 1] as usize);
            let mut used: HashSet<(u32, u32)> = HashSet::new();
            let base = plan.colour_base[b] as usize;
            for c in 0..plan.block_ncolours[b] as usize {
                let (cb, ce) = (plan.colour_ranges[base + c] as usize, plan.colour_ranges[base + c + 1] as usize);
                prop_assert!(lo <= cb && cb <= ce && ce <= hi);
                prop_assert!((cb..ce).all(|p| plan.thread_colour[p] == c as u32), "colour range {} of block {}", c, b);
            }
            prop_assert_eq!(plan.colour_ranges[base] as usize, lo);
            prop_assert_eq!(plan.colour_ranges[base + plan.block_ncolours[b] as usize] as usize, hi);
            for p in lo..hi {
                prop_assert!(plan.thread_colour[p] < plan.block_ncolours[b]);
                if p > lo { prop_assert!(plan.thread_colour[p - 1] <= plan.thread_colour[p], "not sorted by colour"); }
                for t in targets_of(&c, plan.elem[p], idx) {
                    prop_assert!(used.insert((plan.thread_colour[p], t)), "colour clash in block {}", b);
                }
            }
        }
        // Same block colour: disjoint footprints, where a block's footprint is every target
        // its stage-out writes (the staged targets, a superset of its increments' targets).
        let sp = &plan.staged[0];
        for col in 0..plan.block_colours() {
            let mut used: HashSet<u32> = HashSet::new();
            for &b in &plan.block_order[plan.colour_offsets[col]..plan.colour_offsets[col + 1]] {
                prop_assert_eq!(plan.block_colour[b as usize], col as u32);
                let (lo, hi) = (plan.block_offsets[b as usize] as usize, plan.block_offsets[b as usize + 1] as usize);
                let l2g = &sp.l2g[sp.l2g_offsets[b as usize] as usize..sp.l2g_offsets[b as usize + 1] as usize];
                for p in lo..hi {
                    for t in targets_of(&c, plan.elem[p], idx) {
                        prop_assert!(l2g.contains(&t), "target {} of block {} not staged", t, b);
                    }
                }
                for &t in l2g {
                    prop_assert!(used.insert(t), "blocks of colour {} share target {}", col, t);
                }
            }
        }
        // Local and global numbering are inverse (on the staged indices).
        for b in 0..plan.blocks() {
            let (lo, hi) = (plan.block_offsets[b] as usize, plan.block_offsets[b + 1] as usize);
            let l2g = &sp.l2g[sp.l2g_offsets[b] as usize..sp.l2g_offsets[b + 1] as usize];
            prop_assert!(l2g.windows(2).all(|w| w[0] < w[1]));
            let staged: Vec<usize> = slots.map_or((0..c.arity).collect(), <[usize]>::to_vec);
            for p in lo..hi {
                let e = plan.elem[p] as usize;
                for &j in &staged {
                    prop_assert_eq!(l2g[sp.g2l[p * c.arity + j] as usize], c.map[e * c.arity + j]);
                }
            }
        }
        // Staged bytes fit the limit the plan was built for.
        prop_assert!(plan.staged_bytes(&inp) <= config.workgroup_memory);
        // The packed header points at the arrays.
        let packed = plan.pack();
        prop_assert_eq!(&packed[packed[1] as usize..packed[1] as usize + plan.elem.len()], &plan.elem[..]);
    }

    #[test]
    fn global_colouring_is_race_free(c in case(), all in any::<bool>(), balance in any::<bool>()) {
        let idx = if all { None } else { Some(0) };
        let inp = input(&c, idx, false, None);
        let plan = colour_elements(&inp, balance);
        prop_assert_eq!(plan.elem.len(), inp.positions);
        for col in 0..plan.colours() {
            let mut used = HashSet::new();
            for &e in &plan.elem[plan.offsets[col]..plan.offsets[col + 1]] {
                for t in targets_of(&c, e, idx) {
                    prop_assert!(used.insert(t), "colour {} clashes on {}", col, t);
                }
            }
        }
        // The most positions on one target: counted plainly, and a bound on the colours.
        let mut on = std::collections::HashMap::new();
        for &e in &plan.elem {
            for t in targets_of(&c, e, idx) {
                *on.entry(t).or_insert(0usize) += 1;
            }
        }
        let most = most_increments(&inp);
        prop_assert_eq!(most, on.values().copied().max().unwrap_or(0));
        prop_assert!(plan.colours() >= most);
    }
}

#[test]
fn a_single_element_too_large_is_an_error() {
    let map: Vec<u32> = (0..8).collect();
    let inp = PlanInput {
        positions: 2,
        elements: None,
        section_ends: vec![],
        space_sizes: vec![8],
        races: vec![RaceArg {
            space: 0,
            map: &map,
            arity: 4,
            idx: None,
            staged: Some(0),
        }],
        staged: vec![StagedMap {
            map: &map,
            arity: 4,
            bytes_per_target: 64,
            slots: None,
        }],
    };
    let config = PlanConfig {
        workgroup_memory: 100,
        ..Default::default()
    };
    assert_eq!(
        build_blocks(&inp, &config).unwrap_err(),
        PlanError::ElementTooLarge {
            bytes: 256,
            limit: 100
        }
    );
}
