//! What a force ran, in words: `explain()`'s summary and `explain_detail()`'s full text.
//!
//! The summary fits on a screen whatever the force's length: a run of groups that repeats
//! (a time loop's groups, step after step) is one entry with its count, and each distinct
//! reason for a cut is one line with the number of cuts it caused. The detail lists every
//! group and every cut between two groups.

use std::collections::BTreeMap;
use std::fmt::Write;

/// The two texts of one force (or one part of it).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Explain {
    /// What `explain()` gives.
    pub summary: String,
    /// What `explain_detail()` gives.
    pub detail: String,
}

impl Explain {
    /// A line in both texts.
    pub fn line(&mut self, text: &str) {
        for s in [&mut self.summary, &mut self.detail] {
            s.push_str(text);
            s.push('\n');
        }
    }
    /// `other`'s lines, indented by two spaces, in both texts.
    pub fn nest(&mut self, other: &Explain) {
        for (s, o) in [
            (&mut self.summary, &other.summary),
            (&mut self.detail, &other.detail),
        ] {
            s.extend(o.lines().map(|l| format!("  {l}\n")));
        }
    }
    /// Whether nothing was said.
    pub fn is_empty(&self) -> bool {
        self.detail.is_empty()
    }
}

/// The texts for `head` (the force's first line), `groups` (what each group runs, in order,
/// without its number) and `cuts` (the two groups, 0-based, and the reason, for each cut).
pub fn groups_and_cuts(head: &str, groups: &[String], cuts: &[(usize, usize, String)]) -> Explain {
    let mut e = Explain::default();
    e.line(head);
    for (i, g) in groups.iter().enumerate() {
        let _ = writeln!(e.detail, "  group {}{g}", i + 1);
    }
    summarize_groups(&mut e.summary, groups);
    for (a, b, why) in cuts {
        let _ = writeln!(
            e.detail,
            "  cut between group {} and group {}: {why}",
            a + 1,
            b + 1
        );
    }
    // Each reason once, with its count and its first cut, in order of first appearance.
    let mut order: Vec<&str> = Vec::new();
    let mut seen: BTreeMap<&str, (usize, usize, usize)> = BTreeMap::new();
    for (a, b, why) in cuts {
        seen.entry(why).and_modify(|c| c.2 += 1).or_insert_with(|| {
            order.push(why);
            (*a, *b, 1)
        });
    }
    for why in order {
        let (a, b, n) = seen[why];
        let _ = if n == 1 {
            writeln!(
                e.summary,
                "  cut between group {} and group {}: {why}",
                a + 1,
                b + 1
            )
        } else {
            writeln!(
                e.summary,
                "  cut {n} times (first between group {} and group {}): {why}",
                a + 1,
                b + 1
            )
        };
    }
    if e.summary != e.detail {
        e.summary
            .push_str("  (explain_detail() lists every group and every cut)\n");
    }
    e
}

/// The longest period a repeated run of groups is looked for with.
const PERIOD: usize = 12;

/// Groups as lines, a run of `reps` repetitions of `p` groups folded into one entry.
fn summarize_groups(s: &mut String, groups: &[String]) {
    let n = groups.len();
    let mut i = 0;
    while i < n {
        // The period covering the most groups from i on (the shortest among equals).
        let (mut p, mut reps) = (1, 1);
        for q in 1..=PERIOD.min((n - i) / 2) {
            let mut r = 1;
            while i + (r + 1) * q <= n && (0..q).all(|k| groups[i + r * q + k] == groups[i + k]) {
                r += 1;
            }
            if r >= 2 && r * q > reps * p {
                (p, reps) = (q, r);
            }
        }
        if reps == 1 {
            let _ = writeln!(s, "  group {}{}", i + 1, groups[i]);
            i += 1;
            continue;
        }
        let last = i + reps * p;
        if p == 1 {
            let _ = writeln!(
                s,
                "  groups {} to {last} ({reps} alike){}",
                i + 1,
                groups[i]
            );
        } else {
            let _ = writeln!(
                s,
                "  groups {} to {last}: {reps} times the {p} groups",
                i + 1
            );
            for g in &groups[i..i + p] {
                let _ = writeln!(s, "    {}", g.trim_start_matches(' '));
            }
        }
        i = last;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_time_loop_folds_into_one_entry_and_each_reason_into_one_line() {
        let mut groups = vec![" over nodes: `init`".to_string()];
        let mut cuts = Vec::new();
        for step in 0..30 {
            groups.push(" over cells: `flux`".into());
            groups.push(" over nodes: `update`".into());
            let g = 1 + 2 * step;
            cuts.push((g - 1, g, "`flux` reads `u` through a map".to_string()));
            cuts.push((
                g,
                g + 1,
                "`flux` iterates cells and `update` nodes".to_string(),
            ));
        }
        let e = groups_and_cuts("61 loops in 61 groups", &groups, &cuts);
        assert_eq!(e.detail.lines().count(), 1 + 61 + 60);
        assert_eq!(
            e.summary,
            "61 loops in 61 groups
  group 1 over nodes: `init`
  groups 2 to 61: 30 times the 2 groups
    over cells: `flux`
    over nodes: `update`
  cut 30 times (first between group 1 and group 2): `flux` reads `u` through a map
  cut 30 times (first between group 2 and group 3): `flux` iterates cells and `update` nodes
  (explain_detail() lists every group and every cut)
"
        );
    }

    #[test]
    fn a_short_force_is_the_same_in_both() {
        let groups = vec![
            " over cells: `a`".to_string(),
            " over nodes: `b`".to_string(),
        ];
        let cuts = vec![(0, 1, "why".to_string())];
        let e = groups_and_cuts("2 loops in 2 groups", &groups, &cuts);
        assert_eq!(e.summary, e.detail);
        assert!(e.summary.contains("cut between group 1 and group 2: why"));
    }
}
