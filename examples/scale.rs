//! A mesh no rank holds whole, measured: a unit-square triangle mesh generated in blocks and
//! written to HDF5 by every rank, then read, partitioned and distributed, written as a frame in
//! pieces and as a checkpoint, with every phase's time and every rank's peak memory.
//!
//! Built with `--features hdf5,ptscotch` (release), under mpirun:
//!
//! ```text
//! mpirun -np 2 target/release/examples/scale generate --n 2237 /tmp/square.h5   # 10^7 cells
//! mpirun -np 4 target/release/examples/scale read /tmp/square.h5
//! mpirun -np 4 target/release/examples/scale global --n 2237   # the global-array path (METIS)
//! ```
//!
//! Every rank prints one line: its phases (ms) and its peak resident memory (VmHWM, MiB).

use clap::{Parser, Subcommand};
use parloop::dist::{BlockMesh, Comm, Distribution, Partitioner};
use parloop::mesh::CellType;
use parloop::mesh::pvtu::{PartField, PartSeries};
use parloop::{Config, Context, Result};
use std::path::PathBuf;
use std::time::Instant;

#[derive(Parser)]
#[command(about = "A mesh no rank holds whole: generate, read, partition, write, measured")]
struct Args {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Generate the n x n unit-square mesh (2 n^2 triangles) in blocks and write it to FILE.
    Generate {
        #[arg(long)]
        n: usize,
        file: PathBuf,
    },
    /// Read FILE in blocks, partition with PT-Scotch, distribute; then a frame in pieces and a
    /// checkpoint (beside FILE).
    Read {
        file: PathBuf,
        /// Skip the frame and the checkpoint.
        #[arg(long)]
        no_output: bool,
        /// Partition in blocks instead of with PT-Scotch (to tell PT-Scotch's memory from the
        /// rest of the distribution's).
        #[arg(long)]
        block: bool,
    },
    /// The global-array path: every rank makes the whole mesh, METIS partitions on rank 0.
    Global {
        #[arg(long)]
        n: usize,
    },
}

/// This process's peak resident memory (VmHWM) in MiB.
fn peak_mib() -> f64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

/// The vertices of cell c of the n x n square (two triangles per square, counter-clockwise).
fn cell(n: usize, c: usize) -> [u32; 3] {
    let (sq, upper) = (c / 2, c % 2 == 1);
    let (i, j) = (sq % n, sq / n);
    let v = |i: usize, j: usize| (j * (n + 1) + i) as u32;
    if upper {
        [v(i, j), v(i + 1, j + 1), v(i, j + 1)]
    } else {
        [v(i, j), v(i + 1, j), v(i + 1, j + 1)]
    }
}

fn main() {
    if let Err(e) = run(Args::parse()) {
        eprintln!("scale: {e}");
        std::process::exit(1);
    }
}

fn run(a: Args) -> Result<()> {
    let comm = Comm::from_launcher()?;
    let ctx = Context::with_comm(Config::from_env()?, &comm)?;
    let (rank, ranks) = (ctx.rank(), ctx.ranks());
    let mut line = format!("rank {rank} of {ranks}:");
    let t = Instant::now();
    let lap = |t: &mut Instant| {
        let ms = t.elapsed().as_secs_f64() * 1e3;
        *t = Instant::now();
        ms
    };
    let mut t = t;
    match a.command {
        Cmd::Generate { n, file } => {
            let mut b = BlockMesh::new(&ctx);
            let vertices = b.set("vertices", (n + 1) * (n + 1));
            let cells = b.set("cells", 2 * n * n);
            let rows: Vec<u32> = b.range(cells).flat_map(|c| cell(n, c)).collect();
            b.map("cell_vertices", cells, vertices, 3, rows)?;
            let h = 1.0 / n as f32;
            let xy: Vec<f32> = b
                .range(vertices)
                .flat_map(|v| [(v % (n + 1)) as f32 * h, (v / (n + 1)) as f32 * h])
                .collect();
            b.dat("coords", vertices, 2, &xy)?;
            line += &format!(" generate {:.0} ms", lap(&mut t));
            parloop::h5::write(&file, &b)?;
            line += &format!(", write {:.0} ms", lap(&mut t));
            let bytes = std::fs::metadata(&file).map(|m| m.len()).unwrap_or(0);
            line += &format!(", file {:.1} MiB", bytes as f64 / 1048576.0);
        }
        Cmd::Read {
            file,
            no_output,
            block,
        } => {
            let f = parloop::h5::MeshFile::read(&ctx, &file)?;
            line += &format!(" read {:.0} ms (peak {:.0} MiB)", lap(&mut t), peak_mib());
            let cells = f.mesh.find_set("cells").expect("a set named cells");
            let partitioner = if block {
                Partitioner::Block
            } else {
                Partitioner::Scotch
            };
            let mut part = f.mesh.distribute(cells, partitioner)?;
            lap(&mut t);
            for (name, ms) in &part.phase_ms {
                line += &format!(", {name} {ms:.0} ms");
            }
            let (c, v) = (part.set_named("cells")?, part.set_named("vertices")?);
            line += &format!(
                " (peak {:.0} MiB); cells {} owned + {} halo, vertices {} + {}; edge cut {}",
                peak_mib(),
                c.size(),
                c.total() - c.size(),
                v.size(),
                v.total() - v.size(),
                part.edge_cut
            );
            if !no_output {
                let c2v = part.map_named("cell_vertices")?;
                let coords = part.dat_named::<f32>("coords")?;
                let dir = file.with_extension("frames");
                let mut s = PartSeries::new(&ctx, &dir, "square")?;
                lap(&mut t);
                let x = PartField::vertices(&coords)?;
                s.write(0.0, &c2v, CellType::Triangle, &coords, &[x])?;
                let frame_ms = lap(&mut t);
                let mut ck = parloop::h5::Checkpoint::new(&ctx);
                ck.map(&c2v).dat(&coords)?.step(0);
                let ckpath = file.with_extension("checkpoint.h5");
                ck.write(&ckpath)?;
                let ck_ms = lap(&mut t);
                let size = |p: &std::path::Path| std::fs::metadata(p).map_or(0, |m| m.len());
                let frame_bytes: u64 = std::fs::read_dir(&dir)
                    .map(|d| d.flatten().map(|e| size(&e.path())).sum())
                    .unwrap_or(0);
                line += &format!(
                    "; frame {frame_ms:.0} ms ({:.1} MiB, all pieces), checkpoint {ck_ms:.0} ms \
                     ({:.1} MiB) (peak {:.0} MiB)",
                    frame_bytes as f64 / 1048576.0,
                    size(&ckpath) as f64 / 1048576.0,
                    peak_mib()
                );
            }
        }
        Cmd::Global { n } => {
            let mut d = Distribution::new(&ctx);
            let vertices = d.set("vertices", (n + 1) * (n + 1));
            let cells = d.set("cells", 2 * n * n);
            let rows: Vec<u32> = (0..2 * n * n).flat_map(|c| cell(n, c)).collect();
            d.map("cell_vertices", cells, vertices, 3, &rows)?;
            drop(rows);
            let h = 1.0 / n as f32;
            let xy: Vec<f32> = (0..(n + 1) * (n + 1))
                .flat_map(|v| [(v % (n + 1)) as f32 * h, (v / (n + 1)) as f32 * h])
                .collect();
            d.dat("coords", vertices, 2, &xy)?;
            drop(xy);
            line += &format!(
                " generate {:.0} ms (peak {:.0} MiB)",
                lap(&mut t),
                peak_mib()
            );
            let part = d.distribute(cells, Partitioner::KWay)?;
            line += &format!(
                ", partition and distribute {:.0} ms (peak {:.0} MiB); edge cut {} (METIS)",
                lap(&mut t),
                peak_mib(),
                part.edge_cut
            );
        }
    }
    println!("{line}");
    Ok(())
}
