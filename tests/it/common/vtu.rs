//! A reader of VTK XML unstructured grids independent of the writer (quick-xml and base64,
//! not vtkio), for the output tests.
#![allow(dead_code)]

use base64::Engine as _;
use quick_xml::events::Event;
use std::collections::BTreeMap;
use std::path::Path;

/// One DataArray: its type, components and values (as f64).
#[derive(Debug)]
pub struct Array {
    pub ty: String,
    pub comps: usize,
    pub values: Vec<f64>,
}

/// What the reader finds in a `.vtu`.
#[derive(Debug, Default)]
pub struct Vtu {
    pub points: usize,
    pub cells: usize,
    pub point: BTreeMap<String, Array>,
    pub cell: BTreeMap<String, Array>,
    pub connectivity: Vec<f64>,
    pub types: Vec<f64>,
    /// Point coordinates, 3 per point.
    pub points_xyz: Vec<f64>,
}

/// Decodes a binary DataArray: base64 of a UInt64 byte count, then the values.
pub fn decode(ty: &str, text: &str) -> Vec<f64> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text.trim())
        .expect("base64");
    let n = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    let data = &bytes[8..8 + n];
    match ty {
        "Float32" => data
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes(b.try_into().unwrap()) as f64)
            .collect(),
        "Float64" => data
            .chunks_exact(8)
            .map(|b| f64::from_le_bytes(b.try_into().unwrap()))
            .collect(),
        "UInt64" => data
            .chunks_exact(8)
            .map(|b| u64::from_le_bytes(b.try_into().unwrap()) as f64)
            .collect(),
        "UInt8" => data.iter().map(|&b| b as f64).collect(),
        other => panic!("unexpected type {other}"),
    }
}

pub fn read_vtu(path: &Path) -> Vtu {
    let text = std::fs::read_to_string(path).unwrap();
    let mut reader = quick_xml::Reader::from_str(&text);
    let mut out = Vtu::default();
    let (mut section, mut array): (String, Option<(String, String, usize)>) = (String::new(), None);
    loop {
        match reader.read_event().unwrap() {
            Event::Start(e) => {
                let attr = |k: &str| {
                    e.attributes()
                        .flatten()
                        .find(|a| a.key.as_ref() == k.as_bytes())
                        .map(|a| String::from_utf8(a.value.to_vec()).unwrap())
                };
                match e.name().as_ref() {
                    b"VTKFile" => assert_eq!(attr("header_type").as_deref(), Some("UInt64")),
                    b"Piece" => {
                        out.points = attr("NumberOfPoints").unwrap().parse().unwrap();
                        out.cells = attr("NumberOfCells").unwrap().parse().unwrap();
                    }
                    b"PointData" | b"CellData" | b"Points" | b"Cells" => {
                        section = String::from_utf8(e.name().as_ref().to_vec()).unwrap();
                    }
                    b"DataArray" => {
                        assert_eq!(attr("format").as_deref(), Some("binary"));
                        let comps = attr("NumberOfComponents").map_or(1, |c| c.parse().unwrap());
                        array = Some((attr("Name").unwrap(), attr("type").unwrap(), comps));
                    }
                    _ => {}
                }
            }
            Event::Text(t) => {
                if let Some((name, ty, comps)) = array.take() {
                    let values = decode(&ty, &t.unescape().unwrap());
                    match (section.as_str(), name.as_str()) {
                        ("PointData", _) => {
                            drop(out.point.insert(name, Array { ty, comps, values }))
                        }
                        ("CellData", _) => drop(out.cell.insert(name, Array { ty, comps, values })),
                        ("Cells", "connectivity") => out.connectivity = values,
                        ("Points", _) => out.points_xyz = values,
                        ("Cells", "types") => out.types = values,
                        _ => {}
                    }
                }
            }
            Event::Eof => break,
            _ => {}
        }
    }
    out
}
