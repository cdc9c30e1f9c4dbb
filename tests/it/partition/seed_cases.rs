//! The seed-derived partitioning cases (docs/background.md) (JSON files beside this one)
//! and their optimum loop counts; shared by tests/it/partition.rs and benches/partition.rs.

pub const SEED_CASES: [(&str, usize); 10] = [
    ("case1", 2),
    ("case1b", 4),
    ("case2", 3),
    ("case3", 3),
    ("case4", 4),
    ("case5a", 5),
    ("case5b", 5),
    ("case6", 2),
    ("case7", 3),
    ("counterexample", 3),
];
