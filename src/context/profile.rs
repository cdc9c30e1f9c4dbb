//! What a user reads about where a run's time goes: `tune`'s report and cache, the OP2-style
//! table (per rank and over every rank) and the timeline (Chrome trace / Perfetto JSON), and
//! the files `PARLOOP_PROFILE=table` and `trace:PATH` ask for when the Context ends.

use super::*;
use crate::profile::{Row, table};
use std::collections::BTreeMap;
use std::path::Path;

impl Context {
    /// Under [`Strategy::Tune`](crate::Strategy::Tune): per loop group with racing float
    /// increments, the candidates tried with their median times, and the one kept (empty under
    /// any other strategy).
    pub fn tuning(&self) -> Vec<runtime::TuneReport> {
        runtime::timing::collect(&self.0.engine, true);
        self.0
            .engine
            .tuner
            .borrow()
            .as_ref()
            .map_or_else(Vec::new, |t| t.report())
    }
    /// `tune`'s choices as the JSON of its cache file (this adapter's and those read from the
    /// file): what the browser page keeps in its storage. Empty under any other strategy.
    pub fn tune_cache_json(&self) -> String {
        self.0
            .engine
            .tuner
            .borrow()
            .as_ref()
            .map_or_else(String::new, |t| t.to_json())
    }
    /// Adds the choices of a `tune_cache_json` text, for groups not yet seen (a page restoring
    /// them from its storage). An error names what is wrong with the text; under a strategy
    /// other than `tune` this does nothing.
    pub fn load_tune_cache(&self, json: &str) -> Result<()> {
        match self.0.engine.tuner.borrow_mut().as_mut() {
            Some(t) => t
                .load_json(json)
                .map_err(|e| Error::Usage(format!("load_tune_cache: {e}"))),
            None => Ok(()),
        }
    }
    /// The OP2-style table of the loop groups timed so far (with `Config::profile`,
    /// `profile_table` or `trace`): per group, calls, total and mean time, GB/s from the bytes
    /// it moves (the model of `KernelTime::bytes`) and share of the run's wall time.
    /// On N ranks this is collective: rank 0 gets every rank's table and their sum, the other
    /// ranks their own.
    pub fn profile_table(&self) -> Result<String> {
        runtime::timing::collect(&self.0.engine, true);
        let prof = &self.0.engine.profiler;
        prof.table_shown.set(true);
        let rows = prof.rows.borrow().clone();
        let wall = prof.elapsed_s();
        let (rank, ranks) = (self.rank(), self.ranks());
        let title = |r: usize| title(r, ranks);
        if ranks == 1 {
            return Ok(table(&title(0), &rows, wall));
        }
        let json = serde_json::to_string(&(wall, &rows)).expect("plain data");
        let mut bytes = json.into_bytes();
        let len = bytes.len() as u32;
        bytes.resize(bytes.len().div_ceil(4) * 4, b' ');
        let mut words = vec![len];
        words.extend(
            bytes
                .chunks(4)
                .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])),
        );
        // Tagged before the gather (its messages are not): a rank in another call is an
        // error naming both.
        self.agree(Ok(()), "the profile tables")?;
        let Some(all) = self.0.comm.gather(&words, "the profile tables") else {
            return Ok(table(&title(rank), &rows, wall));
        };
        let mut out = String::new();
        let mut sum: BTreeMap<String, Row> = BTreeMap::new();
        let mut longest: f64 = 0.0;
        for (r, w) in all.iter().enumerate() {
            let bytes: Vec<u8> = w[1..].iter().flat_map(|x| x.to_le_bytes()).collect();
            let text = std::str::from_utf8(&bytes[..w[0] as usize]).unwrap_or("");
            let (wall, rows): (f64, BTreeMap<String, Row>) = serde_json::from_str(text)
                .map_err(|e| Error::Usage(format!("internal: rank {r}'s profile: {e}")))?;
            out.push_str(&table(&title(r), &rows, wall));
            longest = longest.max(wall);
            for (k, v) in rows {
                let s = sum.entry(k).or_default();
                s.calls += v.calls;
                s.ns += v.ns;
                s.bytes += v.bytes;
            }
        }
        let combined = format!("parloop profile, {ranks} ranks combined (times summed)");
        out.push_str(&table(&combined, &sum, longest * ranks as f64));
        Ok(out)
    }

    /// This rank's timeline so far as Chrome trace JSON (what `write_trace` writes; the
    /// browser page offers it for download).
    pub fn trace_json(&self) -> String {
        runtime::timing::collect(&self.0.engine, true);
        self.0.engine.profiler.to_json(self.rank(), self.ranks())
    }

    /// Writes this rank's timeline so far (Chrome trace JSON: open it in ui.perfetto.dev or
    /// chrome://tracing) to `path`. Records only with `Config::trace` set; otherwise the file
    /// holds the tracks and no events.
    pub fn write_trace(&self, path: impl AsRef<Path>) -> Result<()> {
        let path = path.as_ref();
        let text = self.trace_json();
        crate::util::replace_file(path, |tmp| std::fs::write(tmp, text)).map_err(|e| {
            Error::file(
                path,
                format!("write_trace: cannot write {}: {e}", path.display()),
            )
        })
    }
}

/// The heading of rank `rank`'s table.
fn title(rank: usize, ranks: usize) -> String {
    if ranks > 1 {
        format!("parloop profile, rank {rank} of {ranks}")
    } else {
        "parloop profile".to_string()
    }
}

/// `path` with `.rank<r>` before its extension (`run.json` -> `run.rank1.json`).
#[cfg(not(target_arch = "wasm32"))]
pub(crate) fn rank_path(path: &Path, rank: usize) -> std::path::PathBuf {
    let stem = path
        .file_stem()
        .map_or_else(String::new, |s| s.to_string_lossy().into_owned());
    let name = match path.extension() {
        Some(e) => format!("{stem}.rank{rank}.{}", e.to_string_lossy()),
        None => format!("{stem}.rank{rank}"),
    };
    path.with_file_name(name)
}

impl Drop for Inner {
    fn drop(&mut self) {
        let (rank, ranks) = (self.comm.rank(), self.comm.size());
        runtime::timing::collect(&self.engine, true);
        let prof = &self.engine.profiler;
        if self.config.profile_table && !prof.table_shown.get() {
            let (rows, wall) = (prof.rows.borrow(), prof.elapsed_s());
            eprint!("{}", table(&title(rank, ranks), &rows, wall));
        }
        // In the browser there is no file: the page downloads `trace_json`.
        #[cfg(not(target_arch = "wasm32"))]
        if let Some(path) = &self.config.trace {
            let path = if ranks > 1 {
                rank_path(path, rank)
            } else {
                path.clone()
            };
            let text = prof.to_json(rank, ranks);
            if let Err(e) = crate::util::replace_file(&path, |tmp| std::fs::write(tmp, text)) {
                eprintln!("parloop: cannot write the timeline {}: {e}", path.display());
            }
        }
    }
}
