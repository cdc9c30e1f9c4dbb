//! ParaView output: a [`Mesh`] with fields on its vertices or cells (scalars, vectors, any
//! number of components; f32 or f64) as one VTK XML unstructured grid (`.vtu`, written with
//! vtkio) per frame, and a `.pvd` collection listing the frames with their times.

use super::{CellType as MeshCell, Mesh};
use crate::{DType, Real};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use vtkio::IOBuffer;
use vtkio::model::{
    Attribute, Attributes, ByteOrder, CellType, Cells, DataArray, DataSet, ElementType,
    UnstructuredGridPiece, Version, VertexNumbers, Vtk,
};

/// Where a field's values live.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum On {
    /// One value (of `dim` components) per vertex: ParaView's point data.
    Vertices,
    /// One value per cell: ParaView's cell data.
    Cells,
}

/// A field to write: a name, where it lives, and its values (a Dat's `data_ro()` on the
/// mesh's vertices or cells). The number of components is the values' length over the number
/// of vertices or cells: 1 is a scalar; 2 is a 2-D vector, written with z = 0 so that ParaView
/// draws it (glyphs, stream lines); 3 a vector; any other number an array of components.
#[derive(Clone, Copy, Debug)]
pub struct Field<'a> {
    name: &'a str,
    on: On,
    values: Values<'a>,
    /// Components per value when there are no values to count them from (an empty piece of a
    /// parallel frame: its arrays must still match the other pieces').
    components: Option<usize>,
}

#[derive(Clone, Copy, Debug)]
enum Values<'a> {
    F32(&'a [f32]),
    F64(&'a [f64]),
}

impl<'a> Field<'a> {
    /// A field on the mesh's vertices.
    pub fn vertices<T: Real>(name: &'a str, values: &'a [T]) -> Field<'a> {
        Field::new(name, On::Vertices, values)
    }
    /// A field on the mesh's cells.
    pub fn cells<T: Real>(name: &'a str, values: &'a [T]) -> Field<'a> {
        Field::new(name, On::Cells, values)
    }
    fn new<T: Real>(name: &'a str, on: On, values: &'a [T]) -> Field<'a> {
        let values = match T::DTYPE {
            DType::F64 => Values::F64(bytemuck::cast_slice(values)),
            DType::F32 => Values::F32(bytemuck::cast_slice(values)),
            DType::U32 | DType::I32 => unreachable!("Real is sealed: f32 and f64 only"),
        };
        Field {
            name,
            on,
            values,
            components: None,
        }
    }
    /// The same field, with `n` components per value even where there are no values.
    pub(crate) fn with_components(mut self, n: usize) -> Field<'a> {
        self.components = Some(n);
        self
    }
    fn len(&self) -> usize {
        match self.values {
            Values::F32(v) => v.len(),
            Values::F64(v) => v.len(),
        }
    }
    /// The VTK array, 2-D vectors padded to 3 components; an error naming the field if its
    /// length is not a whole number of values per vertex or cell.
    fn attribute(&self, count: usize) -> std::io::Result<Attribute> {
        let (what, len) = match self.on {
            On::Vertices => ("vertices", self.len()),
            On::Cells => ("cells", self.len()),
        };
        // An empty mesh takes empty fields (of the components given, else one).
        let empty = count == 0 && len == 0;
        if !empty && (count == 0 || len == 0 || !len.is_multiple_of(count)) {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!(
                    "field `{}` has {len} values, but the mesh has {count} {what}: a field on \
                     {what} has one value (or one per component) for each",
                    self.name
                ),
            ));
        }
        let dim = if empty {
            self.components.unwrap_or(1)
        } else {
            len / count
        };
        fn pad<T: Copy + Default>(v: &[T], dim: usize) -> Vec<T> {
            if dim != 2 {
                return v.to_vec();
            }
            v.chunks_exact(2)
                .flat_map(|p| [p[0], p[1], T::default()])
                .collect()
        }
        let data: IOBuffer = match self.values {
            Values::F32(v) => pad(v, dim).into(),
            Values::F64(v) => pad(v, dim).into(),
        };
        let elem = match dim {
            1 => ElementType::Scalars {
                num_comp: 1,
                lookup_table: None,
            },
            2 | 3 => ElementType::Vectors,
            n => ElementType::Generic(n as u32),
        };
        Ok(Attribute::DataArray(DataArray {
            name: self.name.to_string(),
            elem,
            data,
        }))
    }
}

/// A cell type's VTK type: first-order triangles, quadrilaterals, tetrahedra and hexahedra
/// have the same vertex order in Gmsh (so in [`Mesh`]) and VTK.
fn vtk_type(t: MeshCell) -> CellType {
    match t {
        MeshCell::Triangle => CellType::Triangle,
        MeshCell::Quadrilateral => CellType::Quad,
        MeshCell::Tetrahedron => CellType::Tetra,
        MeshCell::Hexahedron => CellType::Hexahedron,
    }
}

/// Writes `mesh` with `fields` as a `.vtu` file. A field whose length is not a whole number
/// of values per vertex or cell is an error naming it, and nothing is written.
pub fn write_vtu(path: impl AsRef<Path>, mesh: &Mesh, fields: &[Field]) -> std::io::Result<()> {
    let path = path.as_ref();
    // A 2-D mesh is drawn in the plane its solver sees (z = 0), whatever z its file gave.
    let flat = mesh.dim() == 2;
    let points: Vec<f32> = mesh
        .coords
        .iter()
        .flat_map(|c| [c[0], c[1], if flat { 0.0 } else { c[2] }])
        .map(|c| c as f32)
        .collect();
    let connectivity: Vec<u64> = mesh.cells.iter().map(|&v| v as u64).collect();
    let cell_type = vtk_type(mesh.cell_type);
    let per = mesh.cell_type.vertices();
    let ncells = connectivity.len() / per;
    let offsets: Vec<u64> = (1..=ncells as u64).map(|k| per as u64 * k).collect();
    let (mut point, mut cell) = (Vec::new(), Vec::new());
    for f in fields {
        match f.on {
            On::Vertices => point.push(f.attribute(mesh.nvertices())?),
            On::Cells => cell.push(f.attribute(ncells)?),
        }
    }
    let vtk = Vtk {
        version: Version::new_xml(1, 0),
        title: String::new(),
        byte_order: ByteOrder::LittleEndian,
        file_path: None,
        data: DataSet::inline(UnstructuredGridPiece {
            points: points.into(),
            cells: Cells {
                cell_verts: VertexNumbers::XML {
                    connectivity,
                    offsets,
                },
                types: vec![cell_type; ncells],
            },
            data: Attributes { point, cell },
        }),
    };
    let mut xml = Vec::new();
    vtk.write_xml(&mut xml)
        .map_err(|e| std::io::Error::other(format!("writing {}: {e}", path.display())))?;
    let xml = with_piece_counts(&String::from_utf8_lossy(&xml));
    crate::util::replace_file(path, |tmp| std::fs::write(tmp, xml.as_bytes()))
}

/// The piece's `NumberOfPoints` and `NumberOfCells` even when zero: vtkio leaves a zero out,
/// and VTK's readers then take the piece (and, in a .pvtu, the whole frame) as unreadable.
fn with_piece_counts(xml: &str) -> String {
    let Some(at) = xml.find("<Piece") else {
        return xml.to_string();
    };
    let tag_end = xml[at..].find('>').map_or(xml.len(), |k| at + k);
    let tag = &xml[at..tag_end];
    let mut extra = String::new();
    for attr in ["NumberOfPoints", "NumberOfCells"] {
        if !tag.contains(&format!("{attr}=")) {
            extra += &format!(" {attr}=\"0\"");
        }
    }
    let name_end = at + "<Piece".len();
    format!("{}{extra}{}", &xml[..name_end], &xml[name_end..])
}

/// A time series: frames `<stem>_<k>.vtu` next to `<stem>.pvd`, which ParaView opens.
pub struct Series {
    dir: PathBuf,
    stem: String,
    frames: Vec<(f64, String)>,
    /// The number of the next frame's file.
    next: usize,
}

impl Series {
    /// A series written into `dir` (created if missing) as `<stem>.pvd` and its frames; a
    /// series there before is replaced (its frames are overwritten as new ones come).
    pub fn new(dir: impl AsRef<Path>, stem: &str) -> std::io::Result<Series> {
        let dir = dir.as_ref();
        std::fs::create_dir_all(dir)?;
        Ok(Series {
            dir: dir.to_path_buf(),
            stem: stem.to_string(),
            frames: Vec::new(),
            next: 0,
        })
    }

    /// A series that continues the one in `dir` from `time` (a restart from a checkpoint
    /// taken at `time`): the existing `<stem>.pvd`'s frames before `time` are kept and new
    /// frames are numbered after them. Without a `<stem>.pvd`, as [`Series::new`].
    pub fn resume(dir: impl AsRef<Path>, stem: &str, time: f64) -> std::io::Result<Series> {
        let mut s = Series::new(dir, stem)?;
        (s.frames, s.next) = frames_before(&s.pvd_path(), stem, time)?;
        Ok(s)
    }

    /// Writes one frame at `time` and rewrites the collection.
    pub fn write(&mut self, time: f64, mesh: &Mesh, fields: &[Field]) -> std::io::Result<()> {
        let file = format!("{}_{:06}.vtu", self.stem, self.next);
        self.next += 1;
        write_vtu(self.dir.join(&file), mesh, fields)?;
        self.frames.push((time, file));
        let text = pvd(&self.frames);
        crate::util::replace_file(&self.pvd_path(), |tmp| std::fs::write(tmp, text))
    }

    /// The collection file ParaView opens.
    pub fn pvd_path(&self) -> PathBuf {
        self.dir.join(format!("{}.pvd", self.stem))
    }
}

/// The `.pvd` XML of a collection of (time, file) frames.
pub fn pvd(frames: &[(f64, String)]) -> String {
    let mut s = String::from(
        "<?xml version=\"1.0\"?>\n<VTKFile type=\"Collection\" version=\"0.1\" byte_order=\"LittleEndian\">\n  <Collection>\n",
    );
    for (t, f) in frames {
        let f = f
            .replace('&', "&amp;")
            .replace('"', "&quot;")
            .replace('<', "&lt;");
        let _ = writeln!(
            s,
            "    <DataSet timestep=\"{t}\" group=\"\" part=\"0\" file=\"{f}\"/>"
        );
    }
    s.push_str("  </Collection>\n</VTKFile>\n");
    s
}

/// The frames of the collection `pvd` (if it exists) before `time`, and the number after the
/// highest of their files (`<stem>_<k>.vtu` or `.pvtu`).
pub(crate) fn frames_before(
    pvd: &Path,
    stem: &str,
    time: f64,
) -> std::io::Result<(Vec<(f64, String)>, usize)> {
    if !pvd.exists() {
        return Ok((Vec::new(), 0));
    }
    let frames: Vec<(f64, String)> = read_pvd(pvd)?
        .into_iter()
        .filter(|(t, _)| *t < time)
        .collect();
    // After every number a kept frame's file (or a piece of it) could carry, whatever the
    // path it is listed under.
    let numbers = frames.iter().filter_map(|(_, f)| {
        let name = Path::new(f).file_name()?.to_str()?;
        let k = name.strip_prefix(stem)?.strip_prefix('_')?;
        let k = k.split(['_', '.']).next()?;
        k.parse::<u64>().ok()
    });
    let next = match numbers.max() {
        None => 0,
        Some(k) if k < u32::MAX as u64 => k as usize + 1,
        Some(k) => {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!(
                    "{}: frame number {k} leaves no number for the next",
                    pvd.display()
                ),
            ));
        }
    };
    Ok((frames, next))
}

/// The (time, file) frames a `.pvd` collection lists, in its order.
pub fn read_pvd(path: &Path) -> std::io::Result<Vec<(f64, String)>> {
    let text = std::fs::read_to_string(path)?;
    let bad = |what: String| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("{}: {what}", path.display()),
        )
    };
    if !text.contains("<VTKFile") || !text.contains("Collection") {
        return Err(bad("not a VTK collection (.pvd)".into()));
    }
    let attr = |tag: &str, name: &str| -> Option<String> {
        let at = tag.find(&format!(" {name}=\""))? + name.len() + 3;
        let end = tag[at..].find('"')? + at;
        Some(
            tag[at..end]
                .replace("&lt;", "<")
                .replace("&quot;", "\"")
                .replace("&amp;", "&"),
        )
    };
    let mut frames = Vec::new();
    for (k, piece) in text.split("<DataSet").skip(1).enumerate() {
        let tag = &piece[..piece.find('>').unwrap_or(piece.len())];
        let t = attr(tag, "timestep")
            .and_then(|t| t.parse::<f64>().ok())
            .ok_or_else(|| bad(format!("data set {k} has no numeric timestep")))?;
        let file = attr(tag, "file").ok_or_else(|| bad(format!("data set {k} has no file")))?;
        frames.push((t, file));
    }
    Ok(frames)
}
