//! `parloop bench --size tiny` (what CI runs so that the benchmark command never rots): the
//! report has every table, each with its rows, and every number in them is positive.

use std::process::Command;

const SECTIONS: [(&str, usize); 9] = [
    // (heading, table rows at least)
    ("## Copy bandwidth", 0),
    ("## Strategies: a triangle mesh", 6),
    ("## Strategies: Airfoil's res_calc", 6),
    ("## Strategies: the wave", 6),
    ("## Data layout", 2),
    ("## Fusion and lazy evaluation", 3),
    ("## The wave", 3),
    ("## Airfoil", 2),
    ("## Sparse matrices and CG", 1),
];

#[test]
fn the_tiny_benchmark_report_has_every_table_with_positive_numbers() {
    let out = Command::new(env!("CARGO_BIN_EXE_parloop"))
        .args(["bench", "--size", "tiny", "--iterations", "3"])
        .output()
        .expect("runs parloop bench");
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "parloop bench failed: {}\n{report}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(report.starts_with("# parloop benchmark report"), "{report}");
    assert!(
        report.contains("adapter: ") && report.contains("size: tiny"),
        "{report}"
    );
    let copy = report
        .split("**")
        .nth(1)
        .and_then(|s| s.strip_suffix(" GB/s"))
        .and_then(|s| s.parse::<f64>().ok())
        .expect("the copy bandwidth in bold");
    assert!(copy > 0.0, "{report}");
    for (k, (heading, rows)) in SECTIONS.iter().enumerate() {
        let start = report
            .find(heading)
            .unwrap_or_else(|| panic!("no {heading:?} in\n{report}"));
        let end = SECTIONS
            .get(k + 1)
            .and_then(|(next, _)| report.find(next))
            .unwrap_or(report.len());
        let section = &report[start..end];
        let table: Vec<&str> = section
            .lines()
            .filter(|l| l.starts_with('|') && !l.starts_with("|---") && !l.starts_with("|---:"))
            .skip(1) // the header row
            .collect();
        assert!(
            table.len() >= *rows,
            "{heading}: {} rows, expected at least {rows}\n{section}",
            table.len()
        );
        for row in table {
            let cells: Vec<&str> = row.trim_matches('|').split('|').map(str::trim).collect();
            // Every cell but the label is a number (a percentage, a mesh like `20 x 30`
            // stays a label).
            for cell in &cells[1..] {
                let v: f64 = cell
                    .trim_end_matches('%')
                    .parse()
                    .unwrap_or_else(|_| panic!("{heading}: {cell:?} is not a number in {row}"));
                assert!(v > 0.0 && v.is_finite(), "{heading}: {cell} in {row}");
            }
        }
    }
    assert!(report.contains("fused / unfused: "), "{report}");
    // `tune` beside the fixed strategies in the three strategy tables, saying what it chose.
    assert_eq!(report.matches("| tune (measured): ").count(), 3, "{report}");
    assert!(
        report.contains("workgroup") && report.contains("tuned in"),
        "{report}"
    );
}
