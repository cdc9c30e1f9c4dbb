//! Parallel ParaView output, with nothing gathered: every rank writes its piece (the cells it
//! owns and the vertices they use) as a `.vtu`, and rank 0 writes the `.pvtu` that lists the
//! pieces and the `.pvd` series of the frames. The values of a halo vertex come from its owner
//! through the vertex set's exchange lists (one neighbour exchange per field). On one process
//! the single piece is the whole mesh.

use super::vtk::{Field, On, write_vtu};
use super::{CellType, Mesh};
use crate::context::Context;
use crate::data::{Dat, Map, Set};
use crate::error::{Error, Result};
use crate::types::{DType, Real};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// A Dat's values to write: on the vertices (the target set of the cell -> vertex map) or
/// the cells (its source set). Its values are read when it is made (pending loops run).
pub struct PartField {
    name: String,
    on: On,
    set: Set,
    dtype: DType,
    dim: usize,
    /// This rank's owned values.
    words: Vec<u32>,
}

impl PartField {
    /// A field on the vertices.
    pub fn vertices<T: Real>(dat: &Dat<T>) -> Result<PartField> {
        PartField::new(dat, On::Vertices)
    }
    /// A field on the cells.
    pub fn cells<T: Real>(dat: &Dat<T>) -> Result<PartField> {
        PartField::new(dat, On::Cells)
    }
    fn new<T: Real>(dat: &Dat<T>, on: On) -> Result<PartField> {
        Ok(PartField {
            name: dat.name().to_string(),
            on,
            set: dat.set().clone(),
            dtype: T::DTYPE,
            dim: dat.dim(),
            words: bytemuck::cast_slice(&dat.data_ro()?).to_vec(),
        })
    }
}

/// A time series written in pieces: `<stem>_<frame>_<rank>.vtu`, `<stem>_<frame>.pvtu` and
/// `<stem>.pvd` in a directory (ParaView opens the `.pvd`).
pub struct PartSeries {
    ctx: Context,
    dir: PathBuf,
    stem: String,
    frames: Vec<(f64, String)>,
    /// The number of the next frame's files.
    next: usize,
}

impl PartSeries {
    /// A series written into `dir` (created if missing) by every rank of `ctx`.
    pub fn new(ctx: &Context, dir: impl AsRef<Path>, stem: &str) -> Result<PartSeries> {
        let dir = dir.as_ref().to_path_buf();
        let made = std::fs::create_dir_all(&dir)
            .map_err(|e| Error::file(&dir, format!("creating {}: {e}", dir.display())));
        ctx.agree(made, "creating the output directory")?;
        Ok(PartSeries {
            ctx: ctx.clone(),
            dir,
            stem: stem.to_string(),
            frames: Vec::new(),
            next: 0,
        })
    }

    /// A series that continues the one in `dir` from `time` (a restart from a checkpoint
    /// taken at `time`, on any number of ranks): the existing `<stem>.pvd`'s frames before
    /// `time` are kept and new frames are numbered after them. Without a `<stem>.pvd`, as
    /// [`PartSeries::new`]. Collective: rank 0 reads the collection.
    pub fn resume(
        ctx: &Context,
        dir: impl AsRef<Path>,
        stem: &str,
        time: f64,
    ) -> Result<PartSeries> {
        let mut s = PartSeries::new(ctx, dir, stem)?;
        let read = if ctx.rank() == 0 {
            super::vtk::frames_before(&s.pvd_path(), stem, time)
                .map_err(|e| Error::Data(format!("resuming the series: {e}")))
        } else {
            Ok((Vec::new(), 0))
        };
        let (frames, next) = ctx.agree(read, "reading the series to resume")?;
        let mut words = [next as u32];
        ctx.comm()
            .broadcast(&mut words, "numbering the resumed series");
        (s.frames, s.next) = (frames, words[0] as usize);
        Ok(s)
    }

    /// The collection file ParaView opens.
    pub fn pvd_path(&self) -> PathBuf {
        self.dir.join(format!("{}.pvd", self.stem))
    }

    /// Writes one frame at `time`: the cells of `c2v` (of `cell_type`) this rank owns, with
    /// the vertex positions `coords` and `fields`. Collective: an error on one rank (a field
    /// on another set, a file that cannot be written) is an error on every rank.
    pub fn write<T: Real>(
        &mut self,
        time: f64,
        c2v: &Map,
        cell_type: CellType,
        coords: &Dat<T>,
        fields: &[PartField],
    ) -> Result<()> {
        // Tagged before this frame's exchanges: a rank in another call gets an error.
        self.ctx.agree(Ok(()), "writing a frame")?;
        let k = self.next;
        let piece = |r: usize| format!("{}_{k:06}_{r}.vtu", self.stem);
        let rank = self.ctx.rank();
        let out = self.write_piece(&piece(rank), c2v, cell_type, coords, fields);
        self.ctx
            .agree(out, "writing this rank's piece of a frame")?;
        let file = format!("{}_{k:06}.pvtu", self.stem);
        self.next += 1;
        self.frames.push((time, file.clone()));
        let out = if rank == 0 {
            let pieces: Vec<String> = (0..self.ctx.ranks()).map(piece).collect();
            let (text, series) = (pvtu(fields, &pieces), super::vtk::pvd(&self.frames));
            let path = self.dir.join(&file);
            let io = |path: std::path::PathBuf| {
                move |e: std::io::Error| {
                    let message = format!("writing {}: {e}", path.display());
                    Error::File { path, message }
                }
            };
            let pvd = self.pvd_path();
            crate::util::replace_file(&path, |tmp| std::fs::write(tmp, text))
                .map_err(io(path.clone()))
                .and_then(|()| {
                    crate::util::replace_file(&pvd, |tmp| std::fs::write(tmp, series))
                        .map_err(io(pvd.clone()))
                })
        } else {
            Ok(())
        };
        self.ctx.agree(out, "writing the frame's .pvtu and .pvd")
    }

    fn write_piece<T: Real>(
        &self,
        file: &str,
        c2v: &Map,
        cell_type: CellType,
        coords: &Dat<T>,
        fields: &[PartField],
    ) -> Result<()> {
        let (cells, verts) = (c2v.from_set(), c2v.to_set());
        let per = cell_type.vertices();
        if c2v.arity() != per {
            return Err(Error::Usage(format!(
                "writing a frame: map `{}` has {} targets per cell, a {} has {per}",
                c2v.name(),
                c2v.arity(),
                cell_type.name()
            )));
        }
        if coords.set().id() != verts.id() {
            return Err(Error::Usage(format!(
                "writing a frame: the coordinates `{}` are not on `{}`, the vertices of `{}`",
                coords.name(),
                verts.name(),
                c2v.name()
            )));
        }
        if self.ctx.ranks() > 1 && (cells.global_ids().is_none() || verts.global_ids().is_none()) {
            return Err(Error::Usage(format!(
                "writing a frame on {} ranks: map `{}` is not between distributed sets (every \
                 rank would write the whole mesh)",
                self.ctx.ranks(),
                c2v.name()
            )));
        }
        // Every field on the map's vertices or cells, checked before any exchange.
        for f in fields {
            let (set, what) = match f.on {
                On::Vertices => (verts, "vertices"),
                On::Cells => (cells, "cells"),
            };
            if !f.set.same(set) {
                return Err(Error::Usage(format!(
                    "writing a frame: field `{}` is on `{}`, not on the {what} of `{}` (`{}`)",
                    f.name,
                    f.set.name(),
                    c2v.name(),
                    set.name()
                )));
            }
        }
        // The vertices this rank's cells use, numbered in local order.
        let rows = &c2v.values()[..cells.size() * per];
        let mut used = vec![u32::MAX; verts.total()];
        let mut order = Vec::new();
        for &v in rows {
            if used[v as usize] == u32::MAX {
                used[v as usize] = 0;
                order.push(v);
            }
        }
        order.sort_unstable();
        for (k, &v) in order.iter().enumerate() {
            used[v as usize] = k as u32;
        }
        let xyz = self.with_halo(verts, coords.dim() * T::DTYPE.words(), {
            bytemuck::cast_slice(&coords.data_ro()?).to_vec()
        })?;
        let dim = coords.dim();
        let value = |v: usize, c: usize| -> f64 {
            match T::DTYPE {
                DType::F64 => bytemuck::pod_read_unaligned::<f64>(bytemuck::cast_slice(
                    &xyz[(v * dim + c) * 2..(v * dim + c) * 2 + 2],
                )),
                _ => f32::from_bits(xyz[v * dim + c]) as f64,
            }
        };
        let mesh = Mesh {
            coords: order
                .iter()
                .map(|&v| std::array::from_fn(|c| if c < dim { value(v as usize, c) } else { 0.0 }))
                .collect(),
            cell_type,
            cells: rows.iter().map(|&v| used[v as usize]).collect(),
            facets: Vec::new(),
            groups: Vec::new(),
        };
        // Each field's values on the piece's vertices or cells, as f32 or f64.
        let mut values: Vec<(String, On, Vec<f32>, Vec<f64>)> = Vec::new();
        for f in fields {
            let set = match f.on {
                On::Vertices => verts,
                On::Cells => cells,
            };
            let w = f.dim * f.dtype.words();
            debug_assert_eq!(f.words.len(), set.size() * w, "a Dat's owned values");
            let words: Vec<u32> = match f.on {
                On::Vertices => {
                    let all = self.with_halo(verts, w, f.words.clone())?;
                    order
                        .iter()
                        .flat_map(|&v| all[v as usize * w..(v as usize + 1) * w].iter().copied())
                        .collect()
                }
                On::Cells => f.words.clone(),
            };
            let (a, b) = match f.dtype {
                DType::F64 => (Vec::new(), bytemuck::pod_collect_to_vec(&words)),
                _ => (bytemuck::cast_slice(&words).to_vec(), Vec::new()),
            };
            values.push((f.name.clone(), f.on, a, b));
        }
        let fields: Vec<Field> = values
            .iter()
            .zip(fields)
            .map(|((name, on, a, b), f)| {
                let field = match (on, f.dtype) {
                    (On::Vertices, DType::F64) => Field::vertices(name, b),
                    (On::Vertices, _) => Field::vertices(name, a),
                    (On::Cells, DType::F64) => Field::cells(name, b),
                    (On::Cells, _) => Field::cells(name, a),
                };
                field.with_components(f.dim)
            })
            .collect();
        let path = self.dir.join(file);
        write_vtu(&path, &mesh, &fields)
            .map_err(|e| Error::file(&path, format!("writing {}: {e}", path.display())))
    }

    /// A set's owned values (`w` words each) followed by its halo's, received from their
    /// owners through the set's exchange lists.
    fn with_halo(&self, set: &Set, w: usize, mut owned: Vec<u32>) -> Result<Vec<u32>> {
        let ex = set.exchanges();
        owned.resize(set.total() * w, 0);
        if ex.is_empty() {
            return Ok(owned);
        }
        let sends: Vec<(u32, Vec<u32>)> = ex
            .iter()
            .map(|x| {
                let words = x
                    .send
                    .iter()
                    .flat_map(|&e| owned[e as usize * w..(e as usize + 1) * w].iter().copied());
                (x.rank, words.collect())
            })
            .collect();
        let recvs: Vec<(u32, usize)> = ex.iter().map(|x| (x.rank, x.recv.len() * w)).collect();
        let what = || format!("the halo of `{}` for a frame's piece", set.name());
        let got = self
            .ctx
            .comm()
            .exchange(OUTPUT_TAG, &what, &sends, &recvs)?;
        for (x, words) in ex.iter().zip(got) {
            for (k, &e) in x.recv.iter().enumerate() {
                owned[e as usize * w..(e as usize + 1) * w]
                    .copy_from_slice(&words[k * w..(k + 1) * w]);
            }
        }
        Ok(owned)
    }
}

/// The message tag of output's exchanges (above the halo exchanges' sequence numbers; no
/// halo message is in flight while a frame is written: its values were read first).
const OUTPUT_TAG: u16 = 30001;

/// The `.pvtu` of a frame: the arrays every piece holds, and the pieces.
fn pvtu(fields: &[PartField], pieces: &[String]) -> String {
    let mut s = String::from(
        "<?xml version=\"1.0\"?>\n<VTKFile type=\"PUnstructuredGrid\" version=\"1.0\" \
         byte_order=\"LittleEndian\" header_type=\"UInt64\">\n  <PUnstructuredGrid \
         GhostLevel=\"0\">\n",
    );
    for (tag, on) in [("PPointData", On::Vertices), ("PCellData", On::Cells)] {
        let _ = writeln!(s, "    <{tag}>");
        for f in fields.iter().filter(|f| f.on == on) {
            // 2-D vectors are written with z = 0 (see vtk::Field).
            let comps = if f.dim == 2 { 3 } else { f.dim };
            let ty = match f.dtype {
                DType::F64 => "Float64",
                _ => "Float32",
            };
            let name = f
                .name
                .replace('&', "&amp;")
                .replace('"', "&quot;")
                .replace('<', "&lt;");
            let _ = writeln!(
                s,
                "      <PDataArray type=\"{ty}\" Name=\"{name}\" NumberOfComponents=\"{comps}\"/>"
            );
        }
        let _ = writeln!(s, "    </{tag}>");
    }
    s.push_str(
        "    <PPoints>\n      <PDataArray type=\"Float32\" NumberOfComponents=\"3\"/>\n    \
         </PPoints>\n",
    );
    for p in pieces {
        let p = p
            .replace('&', "&amp;")
            .replace('"', "&quot;")
            .replace('<', "&lt;");
        let _ = writeln!(s, "    <Piece Source=\"{p}\"/>");
    }
    s.push_str("  </PUnstructuredGrid>\n</VTKFile>\n");
    s
}
