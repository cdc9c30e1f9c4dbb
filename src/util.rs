//! Small helpers shared by the stages: a seeded random number generator (for generators,
//! property tests and benchmarks; reproducible on every platform), a wall clock that also
//! works in the browser's wasm, and files replaced whole or not at all.

/// SplitMix64: tiny, fast, and good enough for test inputs and synthetic meshes.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x9E37_79B9_7F4A_7C15)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in 0..n (n > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (((self.next_u64() >> 11) as u128 * n as u128) >> 53) as usize
    }
    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
    pub fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }
}

/// Milliseconds since an arbitrary origin (monotonic natively; `performance.now()`-like on the
/// web is not reachable without js-sys, so the web build reports 0).
pub fn now_ms() -> f64 {
    #[cfg(not(target_arch = "wasm32"))]
    {
        use std::sync::OnceLock;
        use std::time::Instant;
        static START: OnceLock<Instant> = OnceLock::new();
        START.get_or_init(Instant::now).elapsed().as_secs_f64() * 1e3
    }
    #[cfg(target_arch = "wasm32")]
    {
        0.0
    }
}

/// Today's date (UTC) as YYYY-MM-DD, for benchmark reports (Howard Hinnant's civil-from-days).
pub fn today() -> String {
    let days = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() / 86_400) as i64;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

/// Runs a future to completion: blocking natively; in the browser only when it needs no wait.
pub(crate) fn block<T>(
    f: impl std::future::Future<Output = crate::error::Result<T>>,
) -> crate::error::Result<T> {
    #[cfg(not(target_arch = "wasm32"))]
    {
        pollster::block_on(f)
    }
    #[cfg(target_arch = "wasm32")]
    {
        use futures::FutureExt;
        f.now_or_never().unwrap_or_else(|| {
            Err(crate::error::Error::Usage(
                "this needs a GPU readback, which the browser cannot wait for synchronously: \
                 use the _async variant"
                    .into(),
            ))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::Rng;

    #[test]
    fn below_is_in_range_and_spread() {
        let mut r = Rng::new(7);
        let mut hits = [0usize; 10];
        for _ in 0..10_000 {
            hits[r.below(10)] += 1;
        }
        assert!(hits.iter().all(|&h| (800..1200).contains(&h)), "{hits:?}");
    }
}

/// A name for this process's next temporary file: its process id and a count, unique among
/// the process's threads.
pub fn temp_id() -> String {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("{}-{n}", std::process::id())
}

/// A temporary name beside `path`, in the same directory (so that a rename onto `path` is
/// atomic), keeping its extension (writers that choose the format from it see the same):
/// `dir/.wave.pvd.tmp-<id>.pvd` for `dir/wave.pvd`. A run killed while writing leaves such a
/// hidden file behind; the target keeps its last complete contents.
pub fn temp_beside(path: &std::path::Path, id: &str) -> std::path::PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let ext = path
        .extension()
        .map(|e| format!(".{}", e.to_string_lossy()))
        .unwrap_or_default();
    path.with_file_name(format!(".{name}.tmp-{id}{ext}"))
}

/// Flushes the file at `path` to disk (through a writable handle, which some systems need).
pub fn sync_file(path: &std::path::Path) -> std::io::Result<()> {
    std::fs::OpenOptions::new()
        .write(true)
        .open(path)?
        .sync_all()
}

/// Replaces `path` with what `write` puts in a temporary file beside it, renamed into place
/// only once written and flushed to disk: killed at any moment, `path` holds its old contents
/// or its new ones, never a part. On an error the temporary file is removed and `path` is
/// untouched.
pub fn replace_file(
    path: &std::path::Path,
    write: impl FnOnce(&std::path::Path) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let tmp = temp_beside(path, &temp_id());
    let done = write(&tmp)
        .and_then(|()| sync_file(&tmp))
        .and_then(|()| std::fs::rename(&tmp, path));
    if done.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    done
}
