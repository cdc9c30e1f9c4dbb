//! parloop's mesh file in HDF5 (feature `hdf5`), read and written by every rank at once with
//! MPI-IO (parallel HDF5), each rank only its block of every set: a mesh no rank ever holds
//! whole ([`MeshFile::read`] gives a [`BlockMesh`], which `distribute` partitions in parallel).
//! One process without MPI reads and writes the same file.
//!
//! The layout (h5dump and h5py show it as is):
//!
//! ```text
//! /                  attributes format = "parloop mesh", version = 1; a checkpoint's step
//! /sets/<name>       a group, attributes size (u64) and order (u64)
//! /maps/<name>       u32 [size of from, arity], attributes from, to (set names) and order
//! /dats/<name>       f32, f64, u32 or i32 [size of set, dim], attributes set and order
//! /globals/<name>    a checkpoint's Globals: [dim] of their type
//! ```
//!
//! `order` keeps the declaration order (owners are derived through the maps in that order).
//! Files come from `parloop convert` (Gmsh's `.msh`, OP2's Airfoil grid), from [`write()`] (a
//! mesh a program generated in blocks) and from [`Checkpoint`].

mod checkpoint;
mod mesh_data;
mod read;

pub use checkpoint::Checkpoint;
pub use read::MeshFile;

use crate::dist::BlockMesh;
use crate::error::{Error, Result};
use crate::types::DType;
use hdf5::types::VarLenUnicode;
use std::path::Path;

const FORMAT: &str = "parloop mesh";
const VERSION: u64 = 1;

/// An HDF5 failure as parloop's error, naming the file and what was being done.
fn h5err(path: &Path, what: &str) -> impl Fn(hdf5::Error) -> Error + use<> {
    let path = path.to_path_buf();
    let what = what.to_string();
    move |e| Error::File {
        message: format!("{}: {what}: {e}", path.display()),
        path: path.clone(),
    }
}

/// Opens or creates `path` on every rank of `comm` (MPI-IO), or on this process alone.
fn open(comm: &crate::dist::Comm, path: &Path, create: bool) -> hdf5::Result<hdf5::File> {
    let mut b = hdf5::File::with_options();
    if let Some(raw) = comm.raw() {
        b.with_fapl(|p| p.mpio(raw, None));
    }
    if create { b.create(path) } else { b.open(path) }
}

fn put_str(loc: &hdf5::Location, name: &str, v: &str) -> hdf5::Result<()> {
    let v: VarLenUnicode = v.parse().map_err(|e| hdf5::Error::from(format!("{e}")))?;
    loc.new_attr::<VarLenUnicode>()
        .create(name)?
        .write_scalar(&v)
}

fn put_u64(loc: &hdf5::Location, name: &str, v: u64) -> hdf5::Result<()> {
    loc.new_attr::<u64>().create(name)?.write_scalar(&v)
}

/// Writes `mesh` (every rank its blocks) to `path`, replacing it. Collective over the mesh's
/// ranks: an error on one rank is an error on all.
pub fn write(path: impl AsRef<Path>, mesh: &BlockMesh) -> Result<()> {
    let ctx = mesh.context().clone();
    // Tagged before HDF5's collective calls: a rank in another call gets an error.
    ctx.agree(Ok(()), "starting to write an HDF5 mesh file")?;
    let out = write_with(path.as_ref(), mesh, None, &[], 1);
    ctx.agree(out, "writing an HDF5 mesh file")
}

/// A Global's values as words: (name, type, words).
pub(crate) type GlobalWords = (String, DType, Vec<u32>);

/// Writes the mesh, a step and Globals (a checkpoint's).
pub(crate) fn write_with(
    path: &Path,
    mesh: &BlockMesh,
    step: Option<u64>,
    globals: &[GlobalWords],
    keep: usize,
) -> Result<()> {
    let e = |what: &str| h5err(path, what);
    let ctx = mesh.context();
    // Nothing touches the disk before the names are checked; then the file is written under
    // a temporary name beside `path` (the same on every rank) and renamed into place by rank
    // 0 once every rank has closed its part: killed at any moment, `path` keeps the last
    // complete file.
    ctx.agree(check_names(mesh, globals), "checking the names to write")?;
    // One name on every rank: rank 0's.
    let mut id = crate::util::temp_id().into_bytes();
    id.resize(32, b' ');
    let mut words: Vec<u32> = bytemuck::pod_collect_to_vec(&id);
    ctx.comm()
        .broadcast(&mut words, "naming the temporary file");
    let id: Vec<u8> = bytemuck::pod_collect_to_vec(&words);
    let tmp = crate::util::temp_beside(path, String::from_utf8_lossy(&id).trim());
    let written = open(ctx.comm(), &tmp, true)
        .map_err(e("creating the file"))
        .and_then(|file| {
            // Every group and dataset handle is closed before the file.
            write_contents(path, &file, mesh, step, globals)?;
            file.close().map_err(e("closing the file"))
        });
    let written = ctx.agree(written, "writing the file's parts");
    if ctx.rank() == 0 {
        let placed = match &written {
            Ok(()) => crate::util::sync_file(&tmp).and_then(|()| place(&tmp, path, keep)),
            Err(_) => Ok(()),
        };
        if written.is_err() || placed.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        if let Err(why) = placed {
            return Err(Error::file(
                &path,
                format!(
                    "{}: written, but it could not be renamed into place from {}: {why}",
                    path.display(),
                    tmp.display()
                ),
            ));
        }
    }
    written
}

/// The position of the first NaN among float values held as words.
pub(crate) fn first_nan(dtype: DType, words: &[u32]) -> Option<usize> {
    match dtype {
        DType::F32 => words.iter().position(|&w| f32::from_bits(w).is_nan()),
        DType::F64 => words
            .chunks_exact(2)
            .position(|w| f64::from_bits(w[0] as u64 | (w[1] as u64) << 32).is_nan()),
        DType::U32 | DType::I32 => None,
    }
}

/// The name of the `k`-th older file kept beside `path`: `ck.h5` gives `ck.1.h5`, `ck.2.h5`.
pub fn older(path: &Path, k: usize) -> std::path::PathBuf {
    let (head, tail) = older_parts(path);
    path.with_file_name(format!("{head}{k}{tail}"))
}

/// What an older file's name holds around its number: `ck.` and `.h5`.
fn older_parts(path: &Path) -> (String, String) {
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy())
        .unwrap_or_default();
    let ext = path
        .extension()
        .map(|e| format!(".{}", e.to_string_lossy()));
    (format!("{stem}."), ext.unwrap_or_default())
}

/// The numbers of the older files kept beside `path` (see [`older`]), ascending, whatever
/// gaps a run killed while shifting them left.
pub(crate) fn kept(path: &Path) -> Vec<usize> {
    let (head, tail) = older_parts(path);
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let mut ks: Vec<usize> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .filter_map(|e| {
            let name = e.ok()?.file_name().into_string().ok()?;
            let k = name.strip_prefix(&head)?.strip_suffix(&tail)?;
            k.parse::<usize>().ok().filter(|&k| k > 0)
        })
        .collect();
    ks.sort_unstable();
    ks
}

/// Puts the complete file `tmp` in place of `path`, keeping `keep` files in all. Nothing is
/// removed before the new file is in place: the current `path` gets a second, temporary name
/// first; then the rename makes the new file `path`; then the older files shift up by one (the
/// oldest past `keep` is replaced) and the previous one takes [`older`]`(path, 1)`. Killed at
/// any moment, `path` is a complete file and every kept file is complete; with `keep` 2 the
/// previous one is always there, with more one slot may be empty for the moment between two
/// renames (the previous file then waits under its temporary name).
fn place(tmp: &Path, path: &Path, keep: usize) -> std::io::Result<()> {
    let previous = if keep >= 2 && path.exists() {
        let p = crate::util::temp_beside(path, &format!("{}-previous", crate::util::temp_id()));
        // A name left by a killed run with the same process id is replaced, never copied
        // onto (it may be a second name of `path` itself).
        let _ = std::fs::remove_file(&p);
        std::fs::hard_link(path, &p).or_else(|e| match e.kind() {
            std::io::ErrorKind::AlreadyExists => Err(e),
            _ => std::fs::copy(path, &p).map(|_| ()),
        })?;
        Some(p)
    } else {
        None
    };
    std::fs::rename(tmp, path)?;
    let Some(previous) = previous else {
        return Ok(());
    };
    // The kept files that exist, from the newest: at most keep - 1 of them. Each rename
    // replaces the next slot at once (the oldest is replaced, never removed first).
    let have = (1..keep).take_while(|&k| older(path, k).exists()).count();
    for k in (1..=have).rev() {
        if k + 1 < keep {
            std::fs::rename(older(path, k), older(path, k + 1))?;
        }
    }
    std::fs::rename(previous, older(path, 1))
}

fn write_contents(
    path: &Path,
    file: &hdf5::File,
    mesh: &BlockMesh,
    step: Option<u64>,
    globals: &[GlobalWords],
) -> Result<()> {
    let ctx = mesh.context();
    let e = |what: &str| h5err(path, what);
    // A raw write that fails on one rank is reported after every rank has made every
    // collective creation (a rank leaving early would hang the others).
    let mut failed: Option<Error> = None;
    put_str(file, "format", FORMAT).map_err(e("writing the format"))?;
    put_u64(file, "version", VERSION).map_err(e("writing the version"))?;
    if let Some(s) = step {
        put_u64(file, "step", s).map_err(e("writing the step"))?;
    }
    let sets: Vec<(&str, usize)> = mesh.sets().collect();
    let g = file.create_group("sets").map_err(e("creating /sets"))?;
    for (k, &(name, size)) in sets.iter().enumerate() {
        let s = g
            .create_group(name)
            .map_err(e(&format!("creating set `{name}`")))?;
        put_u64(&s, "size", size as u64).map_err(e(&format!("writing set `{name}`")))?;
        put_u64(&s, "order", k as u64).map_err(e(&format!("writing set `{name}`")))?;
    }
    let g = file.create_group("maps").map_err(e("creating /maps"))?;
    for (k, (name, m)) in mesh.block_maps().enumerate() {
        let we = e(&format!("writing map `{name}`"));
        let n = sets[m.from].1;
        let ds = g
            .new_dataset::<u32>()
            .shape((n, m.arity))
            .create(name)
            .map_err(&we)?;
        put_str(&ds, "from", sets[m.from].0).map_err(&we)?;
        put_str(&ds, "to", sets[m.to].0).map_err(&we)?;
        put_u64(&ds, "order", k as u64).map_err(&we)?;
        let r = block(mesh, n);
        if let Err(x) = write_block(&ds, &m.rows, r, m.arity) {
            failed.get_or_insert(we(x));
        }
    }
    let g = file.create_group("dats").map_err(e("creating /dats"))?;
    for (k, d) in mesh.block_dats().iter().enumerate() {
        let we = e(&format!("writing Dat `{}`", d.name));
        let n = sets[d.set].1;
        let r = block(mesh, n);
        let ds = match d.dtype {
            DType::F32 => create::<f32>(&g, &d.name, n, d.dim),
            DType::F64 => create::<f64>(&g, &d.name, n, d.dim),
            DType::U32 => create::<u32>(&g, &d.name, n, d.dim),
            DType::I32 => create::<i32>(&g, &d.name, n, d.dim),
        }
        .map_err(&we)?;
        put_str(&ds, "set", sets[d.set].0).map_err(&we)?;
        put_u64(&ds, "order", k as u64).map_err(&we)?;
        let written = match d.dtype {
            DType::F32 => write_block::<f32>(&ds, bytemuck::cast_slice(&d.words), r, d.dim),
            DType::F64 => {
                write_block::<f64>(&ds, &bytemuck::pod_collect_to_vec(&d.words), r, d.dim)
            }
            DType::U32 => write_block::<u32>(&ds, &d.words, r, d.dim),
            DType::I32 => write_block::<i32>(&ds, bytemuck::cast_slice(&d.words), r, d.dim),
        };
        if let Err(x) = written {
            failed.get_or_insert(we(x));
        }
    }
    if !globals.is_empty() {
        let g = file
            .create_group("globals")
            .map_err(e("creating /globals"))?;
        for (name, dtype, words) in globals {
            let we = e(&format!("writing Global `{name}`"));
            let ds = match dtype {
                DType::F32 => g
                    .new_dataset::<f32>()
                    .shape(words.len())
                    .create(name.as_str()),
                DType::F64 => g
                    .new_dataset::<f64>()
                    .shape(words.len() / 2)
                    .create(name.as_str()),
                DType::U32 => g
                    .new_dataset::<u32>()
                    .shape(words.len())
                    .create(name.as_str()),
                DType::I32 => g
                    .new_dataset::<i32>()
                    .shape(words.len())
                    .create(name.as_str()),
            }
            .map_err(&we)?;
            // Every rank holds the same values; rank 0 writes them.
            if ctx.rank() == 0 {
                let written = match dtype {
                    DType::F32 => ds.write_raw(bytemuck::cast_slice::<u32, f32>(words)),
                    DType::F64 => ds.write_raw(&bytemuck::pod_collect_to_vec::<u32, f64>(words)),
                    DType::U32 => ds.write_raw(&words[..]),
                    DType::I32 => ds.write_raw(bytemuck::cast_slice::<u32, i32>(words)),
                };
                if let Err(x) = written {
                    failed.get_or_insert(we(x));
                }
            }
        }
    }
    failed.map_or(Ok(()), Err)
}

/// Every name is an HDF5 link name (not empty, no `/`, not `.`), and no two objects of a
/// kind share one: checked before anything is created (the same on every rank).
fn check_names(mesh: &BlockMesh, globals: &[GlobalWords]) -> Result<()> {
    let kinds: [(&str, Vec<&str>); 4] = [
        ("set", mesh.sets().map(|s| s.0).collect()),
        ("map", mesh.block_maps().map(|m| m.0).collect()),
        (
            "Dat",
            mesh.block_dats().iter().map(|d| d.name.as_str()).collect(),
        ),
        ("Global", globals.iter().map(|g| g.0.as_str()).collect()),
    ];
    for (kind, names) in kinds {
        for (k, name) in names.iter().enumerate() {
            if name.is_empty() || name.contains('/') || *name == "." {
                return Err(Error::Usage(format!(
                    "{kind} `{name}` cannot be written to an HDF5 file: a name there is not \
                     empty, not `.` and has no `/`"
                )));
            }
            if names[..k].contains(name) {
                return Err(Error::Usage(format!(
                    "two {kind}s are named `{name}`: a mesh file names each once"
                )));
            }
        }
    }
    Ok(())
}

/// This rank's block of a set of `n` elements in `mesh`.
fn block(mesh: &BlockMesh, n: usize) -> std::ops::Range<usize> {
    let (p, r) = (mesh.context().ranks(), mesh.context().rank());
    crate::part::rendezvous::block_start(n, p, r)..crate::part::rendezvous::block_start(n, p, r + 1)
}

fn create<T: hdf5::H5Type>(
    g: &hdf5::Group,
    name: &str,
    n: usize,
    dim: usize,
) -> hdf5::Result<hdf5::Dataset> {
    g.new_dataset::<T>().shape((n, dim)).create(name)
}

/// Writes rows `r` of a [n, dim] dataset from `values` (independent MPI-IO).
fn write_block<T: hdf5::H5Type + Copy>(
    ds: &hdf5::Dataset,
    values: &[T],
    r: std::ops::Range<usize>,
    dim: usize,
) -> hdf5::Result<()> {
    if r.is_empty() {
        return Ok(());
    }
    let view = ndarray::ArrayView2::from_shape((r.len(), dim), values)
        .map_err(|e| hdf5::Error::from(format!("{e}")))?;
    ds.write_slice(view, (r, ..))
}
