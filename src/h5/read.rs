//! Reading a mesh file: every rank reads the metadata and its block of every dataset (a
//! hyperslab of rows), then checks what it read; the ranks agree on the outcome at the end,
//! so a bad file is an error on every rank, naming the dataset, the element and the rank.

use super::{FORMAT, GlobalWords, VERSION, h5err, open};
use crate::context::Context;
use crate::dist::BlockMesh;
use crate::error::{Error, Result};
use crate::types::{DType, Scalar};
use hdf5::types::{FloatSize, IntSize, TypeDescriptor, VarLenUnicode};
use std::path::{Path, PathBuf};

/// A mesh file as read by this rank: its blocks of every set, map and Dat (a [`BlockMesh`] to
/// `distribute`), and a checkpoint's step and Globals.
///
/// ```no_run
/// # fn main() -> parloop::Result<()> {
/// use parloop::dist::Partitioner;
/// let ctx = parloop::Context::new()?;
/// let file = parloop::h5::MeshFile::read(&ctx, "grid.h5")?;
/// let cells = file.mesh.find_set("cells").expect("a set named cells");
/// let mut part = file.mesh.distribute(cells, Partitioner::Scotch)?;
/// let x = part.dat_named::<f64>("x")?;
/// # Ok(())
/// # }
/// ```
pub struct MeshFile {
    /// The sets, maps and Dats, this rank's blocks of them.
    pub mesh: BlockMesh,
    step: Option<u64>,
    globals: Vec<GlobalWords>,
}

/// What one rank read, before it is checked.
struct Raw {
    sets: Vec<(String, usize)>,
    /// name, from, to, arity, this block's rows
    maps: Vec<(String, String, String, usize, Vec<u32>)>,
    /// name, set, dim, type, this block's values
    dats: Vec<(String, String, usize, DType, Vec<u32>)>,
    globals: Vec<GlobalWords>,
    step: Option<u64>,
}

impl MeshFile {
    /// Reads `path` on every rank of `ctx` (MPI-IO; each rank its blocks). Collective: a
    /// missing or malformed file is an error on every rank.
    pub fn read(ctx: &Context, path: impl AsRef<Path>) -> Result<MeshFile> {
        let path = path.as_ref();
        let out = read_raw(ctx, path).and_then(|raw| build(ctx, path, raw));
        // The tag is the same on every rank whatever the path's spelling there.
        ctx.agree(out, "reading a parloop mesh file")
    }

    /// The newest readable of `path` and the older files kept beside it
    /// ([`super::Checkpoint::keep`]: `ck.1.h5`, `ck.2.h5`, ...), and its path. Collective. Each
    /// file passed over is logged with its reason (a warning); an error when none is readable,
    /// giving each file's reason.
    pub fn read_newest(ctx: &Context, path: impl AsRef<Path>) -> Result<(MeshFile, PathBuf)> {
        let path = path.as_ref();
        // The highest number kept beside `path`, as rank 0 finds it (a gap left by a run
        // killed while shifting them does not end the search).
        // The numbers rank 0 finds, for every rank: their count, then the list.
        let found = if ctx.rank() == 0 {
            super::kept(path)
        } else {
            Vec::new()
        };
        let mut count = [found.len() as u32];
        ctx.comm()
            .broadcast(&mut count, "counting the older checkpoints");
        let mut ks: Vec<u32> = found
            .iter()
            .map(|&k| k.min(u32::MAX as usize) as u32)
            .collect();
        ks.resize(count[0] as usize, 0);
        ctx.comm()
            .broadcast(&mut ks, "listing the older checkpoints");
        let mut why = Vec::new();
        for k in std::iter::once(0).chain(ks.iter().map(|&k| k as usize)) {
            let p = if k == 0 {
                path.to_path_buf()
            } else {
                super::older(path, k)
            };
            // Whether it exists is rank 0's answer, for every rank.
            let here = if ctx.rank() == 0 && !p.exists() {
                Err(Error::Data(String::new()))
            } else {
                Ok(())
            };
            if k > 0 && ctx.agree(here, "looking for an older checkpoint").is_err() {
                continue;
            }
            match MeshFile::read(ctx, &p) {
                Ok(f) => {
                    for w in &why {
                        log::warn!("restarting from {}: passed over {w}", p.display());
                    }
                    return Ok((f, p));
                }
                Err(e) => why.push(e.to_string()),
            }
        }
        Err(Error::file(
            path,
            format!(
                "no readable checkpoint among {} and the older files beside it: {}",
                path.display(),
                why.join("; ")
            ),
        ))
    }

    /// The step a checkpoint was written at (None for a mesh file).
    pub fn step(&self) -> Option<u64> {
        self.step
    }

    /// The values of the checkpoint's Global `name`, of type `T`.
    pub fn global<T: Scalar>(&self, name: &str) -> Result<Vec<T>> {
        let (_, dtype, words) = self.globals.iter().find(|g| g.0 == name).ok_or_else(|| {
            let have: Vec<&str> = self.globals.iter().map(|g| g.0.as_str()).collect();
            Error::Usage(format!(
                "the file holds no Global named `{name}` (it has: {})",
                have.join(", ")
            ))
        })?;
        if *dtype != T::DTYPE {
            return Err(Error::Usage(format!(
                "Global `{name}` holds {} values, not {}",
                dtype.wgsl(),
                T::DTYPE.wgsl()
            )));
        }
        Ok(bytemuck::pod_collect_to_vec(words))
    }
}

fn get_str(loc: &hdf5::Location, name: &str) -> hdf5::Result<String> {
    Ok(loc
        .attr(name)?
        .read_scalar::<VarLenUnicode>()?
        .as_str()
        .to_string())
}

fn get_u64(loc: &hdf5::Location, name: &str) -> hdf5::Result<u64> {
    loc.attr(name)?.read_scalar::<u64>()
}

/// An attribute of `path` that must hold an integer: one stored as a float or a string is
/// refused (HDF5 would convert 826.5 to 826 without a word). `within` prefixes the message
/// (`set `cells`: `).
fn int_attr(path: &Path, within: &str, loc: &hdf5::Location, name: &str) -> Result<i64> {
    let err = |m: String| Error::file(path, format!("{}: {within}{m}", path.display()));
    let a = loc
        .attr(name)
        .map_err(|e| err(format!("attribute `{name}`: {e}")))?;
    let t = a
        .dtype()
        .and_then(|t| t.to_descriptor())
        .map_err(|e| err(format!("attribute `{name}`: {e}")))?;
    if !matches!(t, TypeDescriptor::Integer(_) | TypeDescriptor::Unsigned(_)) {
        return Err(err(format!(
            "attribute `{name}` is stored as {t:?}, not as an integer"
        )));
    }
    a.read_scalar::<i64>()
        .map_err(|e| err(format!("attribute `{name}`: {e}")))
}

/// Members of a group sorted by their `order` attribute.
fn ordered<T>(
    g: &hdf5::Group,
    open: impl Fn(&str) -> hdf5::Result<T>,
    loc: impl Fn(&T) -> &hdf5::Location,
) -> hdf5::Result<Vec<(String, T)>> {
    let mut v = Vec::new();
    for name in g.member_names()? {
        let obj = open(&name)?;
        let k = get_u64(loc(&obj), "order")?;
        v.push((k, name, obj));
    }
    v.sort_by_key(|x| x.0);
    Ok(v.into_iter().map(|(_, n, o)| (n, o)).collect())
}

/// Rows `r` of a [n, dim] dataset, as words of type T.
fn read_rows<T: hdf5::H5Type + bytemuck::Pod>(
    ds: &hdf5::Dataset,
    r: std::ops::Range<usize>,
) -> hdf5::Result<Vec<u32>> {
    if r.is_empty() {
        return Ok(Vec::new());
    }
    let a = ds.read_slice_2d::<T, _>((r, ..))?;
    let v: Vec<T> = a.iter().copied().collect();
    Ok(bytemuck::pod_collect_to_vec(&v))
}

/// Rows `r` of a map's dataset: integers of any width, each in 0..2^32 - 1 (a negative
/// "no target" marker or a float is an error, not a value converted to another).
fn read_map_rows(
    path: &Path,
    what: &str,
    ds: &hdf5::Dataset,
    r: std::ops::Range<usize>,
) -> Result<Vec<u32>> {
    let e = h5err(path, what);
    let integer = matches!(
        ds.dtype().and_then(|t| t.to_descriptor()).map_err(&e)?,
        TypeDescriptor::Integer(_) | TypeDescriptor::Unsigned(_)
    );
    if !integer {
        return Err(Error::file(
            &path,
            format!(
                "{}: {what} does not hold integers (a map's targets are element numbers)",
                path.display()
            ),
        ));
    }
    if r.is_empty() {
        return Ok(Vec::new());
    }
    let start = r.start;
    let a = ds.read_slice_2d::<i64, _>((r, ..)).map_err(&e)?;
    let arity = a.ncols().max(1);
    a.iter()
        .enumerate()
        .map(|(k, &v)| {
            u32::try_from(v)
                .ok()
                .filter(|&v| v != u32::MAX)
                .ok_or_else(|| {
                    Error::file(&path, format!(
                        "{}: {what}: value {v} at element {}, index {} is not an element number",
                        path.display(),
                        start + k / arity,
                        k % arity
                    ))
                })
        })
        .collect()
}

fn dtype_of(ds: &hdf5::Dataset) -> hdf5::Result<Option<DType>> {
    Ok(match ds.dtype()?.to_descriptor()? {
        TypeDescriptor::Float(FloatSize::U4) => Some(DType::F32),
        TypeDescriptor::Float(FloatSize::U8) => Some(DType::F64),
        TypeDescriptor::Unsigned(IntSize::U4) => Some(DType::U32),
        TypeDescriptor::Integer(IntSize::U4) => Some(DType::I32),
        _ => None,
    })
}

fn read_raw(ctx: &Context, path: &Path) -> Result<Raw> {
    let e = |what: &str| h5err(path, what);
    // Decided together before the collective open (a path that exists on some ranks only).
    let exists = if path.exists() {
        Ok(())
    } else {
        Err(Error::file(
            &path,
            format!(
                "{}: no such file (a parloop mesh file: `parloop convert` writes one from a Gmsh \
             mesh or OP2's grid)",
                path.display()
            ),
        ))
    };
    ctx.agree(exists, "opening a parloop mesh file")?;
    let file = open(ctx.comm(), path, false).map_err(e("opening the file"))?;
    // Every group and dataset handle is closed before the file.
    let raw = read_contents(ctx, path, &file)?;
    file.close().map_err(e("closing the file"))?;
    Ok(raw)
}

fn read_contents(ctx: &Context, path: &Path, file: &hdf5::File) -> Result<Raw> {
    let e = |what: &str| h5err(path, what);
    let format = get_str(file, "format").unwrap_or_default();
    let version = get_u64(file, "version").unwrap_or(0);
    if format != FORMAT || version != VERSION {
        return Err(Error::file(
            &path,
            format!(
                "{}: not a parloop mesh file of version {VERSION} (its format attribute is \
             {format:?}, its version {version}); `parloop convert` writes one",
                path.display()
            ),
        ));
    }
    // A checkpoint's step: absent in a mesh file, else a count.
    let step = match file.attr_names().map_err(e("reading the attributes"))? {
        names if names.iter().any(|n| n == "step") => match int_attr(&path, "", file, "step") {
            Ok(n) if n >= 0 => Some(n as u64),
            Ok(n) => {
                return Err(Error::file(
                    &path,
                    format!(
                        "{}: the checkpoint's step is {n}; a step counts from 0",
                        path.display()
                    ),
                ));
            }
            Err(e) => return Err(e),
        },
        _ => None,
    };
    let (p, rank) = (ctx.ranks(), ctx.rank());
    let block = |n: usize| {
        crate::part::rendezvous::block_start(n, p, rank)
            ..crate::part::rendezvous::block_start(n, p, rank + 1)
    };
    let g = file.group("sets").map_err(e("opening /sets"))?;
    let sets: Vec<(String, usize)> = ordered(&g, |n| g.group(n), |x| x)
        .map_err(e("reading /sets"))?
        .into_iter()
        .map(|(name, s)| {
            let size = int_attr(&path, &format!("set `{name}`: "), &s, "size");
            match size? {
                n if (0..u32::MAX as i64).contains(&n) => Ok((name, n as usize)),
                n => Err(Error::file(
                    &path,
                    format!(
                        "{}: set `{name}` has size {n}; a set holds 0 to 4294967294 elements",
                        path.display()
                    ),
                )),
            }
        })
        .collect::<Result<_>>()?;
    let size_of = |set: &str, what: &str| -> Result<usize> {
        sets.iter()
            .find(|s| s.0 == set)
            .map(|s| s.1)
            .ok_or_else(|| {
                Error::file(
                    &path,
                    format!(
                        "{}: {what} names set `{set}`, which /sets lacks",
                        path.display()
                    ),
                )
            })
    };
    let mut maps = Vec::new();
    let g = file.group("maps").map_err(e("opening /maps"))?;
    for (name, ds) in ordered(&g, |n| g.dataset(n), |x| x).map_err(e("reading /maps"))? {
        let what = format!("map `{name}`");
        let from = get_str(&ds, "from").map_err(e(&what))?;
        let to = get_str(&ds, "to").map_err(e(&what))?;
        let n = size_of(&from, &what)?;
        size_of(&to, &what)?;
        let shape = ds.shape();
        if shape.len() != 2 || shape[0] != n || shape[1] == 0 {
            return Err(Error::file(
                &path,
                format!(
                    "{}: {what} has shape {shape:?}, expected [{n}, arity] ({n} elements of \
                 `{from}`, arity at least 1)",
                    path.display()
                ),
            ));
        }
        let rows = read_map_rows(path, &what, &ds, block(n))?;
        maps.push((name, from, to, shape[1], rows));
    }
    let mut dats = Vec::new();
    let g = file.group("dats").map_err(e("opening /dats"))?;
    for (name, ds) in ordered(&g, |n| g.dataset(n), |x| x).map_err(e("reading /dats"))? {
        let what = format!("Dat `{name}`");
        let set = get_str(&ds, "set").map_err(e(&what))?;
        let n = size_of(&set, &what)?;
        let shape = ds.shape();
        if shape.len() != 2 || shape[0] != n || shape[1] == 0 {
            return Err(Error::file(
                &path,
                format!(
                    "{}: {what} has shape {shape:?}, expected [{n}, dim] ({n} elements of `{set}`)",
                    path.display()
                ),
            ));
        }
        let dtype = dtype_of(&ds).map_err(e(&what))?.ok_or_else(|| {
            Error::file(
                &path,
                format!(
                    "{}: {what} is of a type parloop does not hold (f32, f64, u32 or i32)",
                    path.display()
                ),
            )
        })?;
        let r = block(n);
        let words = match dtype {
            DType::F32 => read_rows::<f32>(&ds, r),
            DType::F64 => read_rows::<f64>(&ds, r),
            DType::U32 => read_rows::<u32>(&ds, r),
            DType::I32 => read_rows::<i32>(&ds, r),
        }
        .map_err(e(&what))?;
        dats.push((name, set, shape[1], dtype, words));
    }
    let mut globals = Vec::new();
    if let Ok(g) = file.group("globals") {
        for name in g.member_names().map_err(e("reading /globals"))? {
            let what = format!("Global `{name}`");
            let ds = g.dataset(&name).map_err(e(&what))?;
            let dtype = dtype_of(&ds).map_err(e(&what))?.ok_or_else(|| {
                Error::file(
                    &path,
                    format!("{}: {what} is of an unknown type", path.display()),
                )
            })?;
            let words: Vec<u32> = match dtype {
                DType::F32 => ds
                    .read_raw::<f32>()
                    .map(|v| bytemuck::pod_collect_to_vec(&v)),
                DType::F64 => ds
                    .read_raw::<f64>()
                    .map(|v| bytemuck::pod_collect_to_vec(&v)),
                DType::U32 => ds.read_raw::<u32>(),
                DType::I32 => ds
                    .read_raw::<i32>()
                    .map(|v| bytemuck::pod_collect_to_vec(&v)),
            }
            .map_err(e(&what))?;
            globals.push((name, dtype, words));
        }
    }
    Ok(Raw {
        sets,
        maps,
        dats,
        globals,
        step,
    })
}

/// The BlockMesh of what this rank read, each map's rows checked.
fn build(ctx: &Context, path: &Path, raw: Raw) -> Result<MeshFile> {
    let mut mesh = BlockMesh::new(ctx);
    let sets: Vec<_> = raw.sets.iter().map(|(n, s)| mesh.set(n, *s)).collect();
    let find = |name: &str| sets[raw.sets.iter().position(|s| s.0 == name).expect("checked")];
    for (name, from, to, arity, rows) in raw.maps {
        mesh.map_here(&name, find(&from), find(&to), arity, rows)
            .map_err(|e| Error::file(&path, format!("{}: {e}", path.display())))?;
    }
    for (name, set, dim, dtype, words) in raw.dats {
        let first = mesh.range(find(&set)).start;
        if let Some(k) = super::first_nan(dtype, &words) {
            return Err(Error::file(
                &path,
                format!(
                    "{}: Dat `{name}` holds NaN at element {} (component {}; rank {} of {}): the \
                 run that wrote it had diverged; restart from an earlier checkpoint",
                    path.display(),
                    first + k / dim,
                    k % dim,
                    ctx.rank(),
                    ctx.ranks()
                ),
            ));
        }
        mesh.dat_words(&name, find(&set), dim, dtype, words)
            .map_err(|e| Error::file(&path, format!("{}: {e}", path.display())))?;
    }
    Ok(MeshFile {
        mesh,
        step: raw.step,
        globals: raw.globals,
    })
}
