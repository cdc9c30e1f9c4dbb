//! Greedy colouring with 32-bit masks (seed 002): for each item, OR the masks of every entry it
//! increments, take the lowest free bit (or, balanced, the least-used free colour), set that bit
//! in those entries. Items left over when all 32 bits are taken wait for another pass whose
//! colours are offset by 32. Only the entries a pass touched are zeroed before the next pass.

/// Entries an item increments: (space, index) pairs, where a space is one racing Dat.
pub(crate) type Entry = (usize, u32);

/// Zeroed colour masks, one per entry of each space.
pub(crate) fn masks(sizes: &[usize]) -> Vec<Vec<u32>> {
    sizes.iter().map(|&n| vec![0u32; n]).collect()
}

/// Colours items given a function listing each item's entries. `masks` must be all zero and is
/// left all zero. Returns each item's colour and the number of colours.
pub(crate) fn greedy(
    items: usize,
    masks: &mut [Vec<u32>],
    balance: bool,
    mut entries: impl FnMut(usize, &mut Vec<Entry>),
) -> (Vec<u32>, u32) {
    let mut colour = vec![u32::MAX; items];
    let mut touched: Vec<Entry> = Vec::new();
    let mut buf: Vec<Entry> = Vec::new();
    let mut offset = 0u32;
    let mut ncolours = 0u32;
    let mut pending: Vec<usize> = (0..items).collect();
    while !pending.is_empty() {
        let mut counts = [0u32; 32];
        let mut left = Vec::new();
        for &i in &pending {
            buf.clear();
            entries(i, &mut buf);
            let mask = buf.iter().fold(0u32, |m, &(s, t)| m | masks[s][t as usize]);
            if mask == u32::MAX {
                left.push(i);
                continue;
            }
            let free = !mask;
            let c = if balance {
                // The least-used free colour among those already in use, else a new one.
                let used = (0..32).filter(|&c| counts[c] > 0 && free >> c & 1 == 1);
                used.min_by_key(|&c| counts[c])
                    .unwrap_or(free.trailing_zeros() as usize) as u32
            } else {
                free.trailing_zeros()
            };
            counts[c as usize] += 1;
            colour[i] = offset + c;
            ncolours = ncolours.max(offset + c + 1);
            for &(s, t) in &buf {
                if masks[s][t as usize] == 0 {
                    touched.push((s, t));
                }
                masks[s][t as usize] |= 1 << c;
            }
        }
        for &(s, t) in &touched {
            masks[s][t as usize] = 0;
        }
        touched.clear();
        pending = left;
        offset += 32;
    }
    (colour, ncolours)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn high_contention_needs_more_than_32_colours() {
        // 100 items all increment entry 0: 100 colours over 4 passes.
        let (col, n) = greedy(100, &mut masks(&[1]), false, |_, out| out.push((0, 0)));
        assert_eq!(n, 100);
        let mut sorted = col.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..100).collect::<Vec<u32>>());
    }

    #[test]
    fn balance_spreads_items_over_colours() {
        // A path 0-1-2-...: item i increments entries i and i+1. Greedy uses 2 colours.
        let (col, n) = greedy(10, &mut masks(&[11]), true, |i, out| {
            out.push((0, i as u32));
            out.push((0, i as u32 + 1));
        });
        assert_eq!(n, 2);
        assert!(col.windows(2).all(|w| w[0] != w[1]));
    }
}
