//! `tune`'s cache: its choices as JSON, in a file (`Config::tune_cache`) or the page's
//! storage. Each choice is kept per adapter (name, driver, backend) and per group key (kernel
//! sources, arguments, layout, checking, size class). A file that cannot be read or parsed
//! is ignored with a warning (the groups are tuned again); writes go through a temporary file
//! renamed into place, merged with what other processes wrote meanwhile.

use crate::error::Error;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// A choice as the cache keeps it.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub(super) struct Stored {
    pub adapter: String,
    pub key: String,
    pub group: String,
    pub strategy: String,
    pub workgroup_size: u32,
    /// The cap on a reducing group's workgroups (absent: the group does not reduce, or the
    /// entry predates caps).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reduction_workgroups: Option<u32>,
    pub ms: f64,
}

#[derive(Serialize, Deserialize, Default)]
struct CacheFile<T> {
    version: u32,
    choices: Vec<T>,
}

/// The choices known: read at the start (file or page) and made in this run.
#[derive(Default)]
pub(super) struct Cache {
    pub file: Option<PathBuf>,
    /// Every choice known, for look-ups.
    pub stored: Vec<Stored>,
    /// The choices made (or dropped) in this run: what a save writes over the file.
    mine: Vec<Stored>,
    dropped: Vec<(String, String)>,
}

/// Puts `s` in `list` in place of the entry of its adapter and key.
fn put(list: &mut Vec<Stored>, s: Stored) {
    list.retain(|o| !(o.adapter == s.adapter && o.key == s.key));
    list.push(s);
}

/// The choices of a cache's JSON; an entry that is not a choice is skipped (the others are
/// kept), a text that is not a cache is an error.
fn parse(text: &str) -> Result<Vec<Stored>, Error> {
    let f: CacheFile<serde_json::Value> = serde_json::from_str(text)
        .map_err(|e| Error::Data(format!("not a parloop tune cache ({e})")))?;
    if f.version != 1 {
        return Err(Error::Data(format!(
            "cache version {} (this parloop writes 1)",
            f.version
        )));
    }
    Ok(f.choices
        .into_iter()
        .filter_map(|c| serde_json::from_value(c).ok())
        .collect())
}

fn json(choices: &[Stored]) -> String {
    let f = CacheFile {
        version: 1,
        choices: choices.to_vec(),
    };
    serde_json::to_string_pretty(&f).expect("plain data")
}

impl Cache {
    /// The cache of `file`; a warning when it cannot be read.
    pub fn open(file: Option<PathBuf>) -> (Cache, Option<String>) {
        let mut c = Cache {
            file,
            ..Cache::default()
        };
        let mut warning = None;
        if let Some(f) = c.file.clone() {
            match std::fs::read_to_string(&f) {
                Ok(text) => {
                    if let Err(e) = c.load(&text) {
                        warning = Some(format!("{}: {e}; tuning again", f.display()));
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => warning = Some(format!("cannot read {}: {e}; tuning again", f.display())),
            }
        }
        (c, warning)
    }

    /// Adds the choices of a cache's JSON.
    pub fn load(&mut self, text: &str) -> Result<(), Error> {
        for s in parse(text)? {
            put(&mut self.stored, s);
        }
        Ok(())
    }

    pub fn find(&self, adapter: &str, key: &str) -> Option<&Stored> {
        self.stored
            .iter()
            .find(|s| s.adapter == adapter && s.key == key)
    }

    /// Every choice known, as the cache's JSON.
    pub fn to_json(&self) -> String {
        json(&self.stored)
    }

    /// Keeps a choice made in this run, and writes the file.
    pub fn choose(&mut self, s: Stored) -> Result<(), Error> {
        self.dropped
            .retain(|(a, k)| !(*a == s.adapter && *k == s.key));
        put(&mut self.stored, s.clone());
        put(&mut self.mine, s);
        self.save()
    }

    /// Forgets a choice that could not run (from a file or another group of the same key).
    pub fn drop_choice(&mut self, adapter: &str, key: &str) {
        self.stored
            .retain(|o| !(o.adapter == adapter && o.key == key));
        self.mine
            .retain(|o| !(o.adapter == adapter && o.key == key));
        self.dropped.push((adapter.to_string(), key.to_string()));
    }

    /// Writes the file: what it holds now, with this run's choices over it.
    fn save(&mut self) -> Result<(), Error> {
        let Some(f) = self.file.clone() else {
            return Ok(());
        };
        let mut merged = std::fs::read_to_string(&f)
            .ok()
            .and_then(|t| parse(&t).ok())
            .unwrap_or_default();
        merged.retain(|o| {
            !self
                .dropped
                .iter()
                .any(|(a, k)| o.adapter == *a && o.key == *k)
        });
        for s in &self.mine {
            put(&mut merged, s.clone());
        }
        // What the file holds now wins over what this run read at its start.
        for s in &merged {
            put(&mut self.stored, s.clone());
        }
        write_atomically(&f, &json(&merged))
            .map_err(|e| Error::file(&f, format!("cannot write {}: {e}", f.display())))
    }
}

/// Writes `text` to a temporary file beside `f` (named by process, thread and time, so that
/// processes and threads never share one) and renames it into place.
fn write_atomically(f: &Path, text: &str) -> std::io::Result<()> {
    let unique = format!(
        "tmp-{}-{:?}-{}",
        std::process::id(),
        std::thread::current().id(),
        web_time::SystemTime::now()
            .duration_since(web_time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    )
    .replace(|c: char| !c.is_ascii_alphanumeric() && c != '-', "");
    let tmp = f.with_extension(unique);
    let written = f
        .parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|_| std::fs::write(&tmp, text))
        .and_then(|_| std::fs::rename(&tmp, f));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// `parloop/tune.json` in the user's cache directory (none in the browser).
pub(super) fn user_cache_file() -> Option<PathBuf> {
    #[cfg(not(target_arch = "wasm32"))]
    return dirs::cache_dir().map(|d| d.join("parloop").join("tune.json"));
    #[cfg(target_arch = "wasm32")]
    None
}
