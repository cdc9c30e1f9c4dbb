//! `parloop bench --size tiny` (what CI runs so that the benchmark command never rots): the
//! report has every table, each with its rows, and every number in them is positive (counts
//! per operation or iteration may be 0; a median with its range lies within it; GPU times are
//! `-` on an adapter without timestamps).

use std::process::Command;

const SECTIONS: [(&str, usize); 11] = [
    // (heading, table rows at least)
    ("## Copy bandwidth", 0),
    ("## Strategies: a triangle mesh", 6),
    ("## Strategies: Airfoil's res_calc", 6),
    ("## Strategies: the wave", 6),
    ("## Data layout", 2),
    ("## Fusion and lazy evaluation", 3),
    ("## The wave", 3),
    ("## Airfoil", 2),
    ("## Vector operations", 10),
    // Six scatters, in f32 (and f64 where the adapter has it).
    ("## Contention: increments onto few targets", 6),
    // Its two tables: the solve, and the two recurrences side by side.
    ("## Sparse matrices and CG", 3),
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
        // Rows with their table's header cells (a header is the line above a `|---` line).
        let lines: Vec<&str> = section.lines().filter(|l| l.starts_with('|')).collect();
        let cells = |row: &str| -> Vec<String> {
            row.trim_matches('|')
                .split('|')
                .map(|c| c.trim().to_string())
                .collect()
        };
        let mut header = Vec::new();
        let mut table = Vec::new();
        for (i, l) in lines.iter().enumerate() {
            if l.starts_with("|---") {
                continue;
            }
            if lines.get(i + 1).is_some_and(|n| n.starts_with("|---")) {
                header = cells(l);
            } else {
                table.push((header.clone(), *l));
            }
        }
        assert!(
            table.len() >= *rows,
            "{heading}: {} rows, expected at least {rows}\n{section}",
            table.len()
        );
        for (header, row) in table {
            let cells = cells(row);
            // Every cell but the label is a number (a percentage, a mesh like `20 x 30`
            // stays a label); a median may carry its range, `m (lo-hi)`.
            for (c, cell) in cells.iter().enumerate().skip(1) {
                // GPU times need timestamp queries, and a strategy the adapter: `-` where it
                // has none.
                let optional = |h: &String| h.starts_with("GPU") || h == "atomics" || h == "cas";
                if cell == "-" && header.get(c).is_some_and(optional) {
                    continue;
                }
                let number = |s: &str| -> f64 {
                    s.trim_end_matches('%')
                        .parse()
                        .unwrap_or_else(|_| panic!("{heading}: {cell:?} is not a number in {row}"))
                };
                let v = match cell.split_once(" (") {
                    Some((m, range)) => {
                        let (lo, hi) = range
                            .trim_end_matches(')')
                            .split_once('-')
                            .unwrap_or_else(|| panic!("{heading}: {cell:?} in {row}"));
                        let (m, lo, hi) = (number(m), number(lo), number(hi));
                        assert!(lo <= m && m <= hi, "{heading}: {cell} in {row}");
                        m
                    }
                    None => number(cell),
                };
                let count = header.get(c).is_some_and(|h| {
                    ["dispatches", "submissions", "readbacks", "uploads"].contains(&h.as_str())
                });
                assert!(
                    v.is_finite() && (v > 0.0 || (count && v == 0.0)),
                    "{heading}: {cell} in {row}"
                );
            }
        }
    }
    assert!(report.contains("fused / unfused: "), "{report}");
    // The contention rows say what `auto` ran.
    let contention = &report[report.find("## Contention").expect("a contention section")..];
    let said = contention
        .lines()
        .take_while(|l| !l.starts_with("## Sparse"))
        .filter(|l| {
            ["(global-colour) |", "(atomics) |", "(cas) |"]
                .iter()
                .any(|s| l.contains(s))
        })
        .count();
    assert!(said >= 6, "{contention}");
    // `tune` beside the fixed strategies in the three strategy tables, saying what it chose.
    assert_eq!(report.matches("| tune (measured): ").count(), 3, "{report}");
    assert!(
        report.contains("workgroup") && report.contains("tuned in"),
        "{report}"
    );
}
