//! ParaView output: a [`Mesh`] with vertex fields as one VTK XML unstructured grid (`.vtu`,
//! written with vtkio) per frame, and a `.pvd` collection listing the frames with their times.

use super::{CellType as MeshCell, Mesh};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use vtkio::model::{
    Attribute, Attributes, ByteOrder, CellType, Cells, DataArray, DataSet, UnstructuredGridPiece,
    Version, VertexNumbers, Vtk,
};

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

/// Writes `mesh` with vertex fields (one value per vertex each) as a `.vtu` file.
pub fn write_vtu(path: &Path, mesh: &Mesh, fields: &[(&str, &[f32])]) -> std::io::Result<()> {
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
    let point = fields
        .iter()
        .map(|(name, values)| {
            Attribute::DataArray(DataArray::scalars(*name, 1).with_data(values.to_vec()))
        })
        .collect();
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
            data: Attributes {
                point,
                cell: vec![],
            },
        }),
    };
    vtk.export(path)
        .map_err(|e| std::io::Error::other(format!("writing {}: {e}", path.display())))
}

/// A time series: frames `<stem>_<k>.vtu` next to `<stem>.pvd`, which ParaView opens.
pub struct Series {
    dir: PathBuf,
    stem: String,
    frames: Vec<(f64, String)>,
}

impl Series {
    /// A series written into `dir` (created if missing) as `<stem>.pvd` and its frames.
    pub fn new(dir: &Path, stem: &str) -> std::io::Result<Series> {
        std::fs::create_dir_all(dir)?;
        Ok(Series {
            dir: dir.to_path_buf(),
            stem: stem.to_string(),
            frames: Vec::new(),
        })
    }

    /// Writes one frame at `time` and rewrites the collection.
    pub fn write(
        &mut self,
        time: f64,
        mesh: &Mesh,
        fields: &[(&str, &[f32])],
    ) -> std::io::Result<()> {
        let file = format!("{}_{:06}.vtu", self.stem, self.frames.len());
        write_vtu(&self.dir.join(&file), mesh, fields)?;
        self.frames.push((time, file));
        std::fs::write(self.pvd_path(), pvd(&self.frames))
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
