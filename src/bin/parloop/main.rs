//! The `parloop` command line: `info` (adapters and limits), `partition` (the loop-graph
//! partitioner on a JSON graph), `plan` (execution-plan statistics for a mesh), `bench` (every
//! measurement on the adapter present, as one markdown report).

#[cfg(target_arch = "wasm32")]
fn main() {}

#[cfg(not(target_arch = "wasm32"))]
fn main() {
    std::process::exit(cli::main());
}

#[cfg(not(target_arch = "wasm32"))]
mod bench;
#[cfg(all(feature = "hdf5", not(target_arch = "wasm32")))]
mod convert;

#[cfg(not(target_arch = "wasm32"))]
mod cli {
    use clap::{Parser, Subcommand};
    use parloop::graph::{self, Algorithm, Format, Graph};
    use std::path::PathBuf;

    #[derive(Parser)]
    #[command(
        name = "parloop",
        version,
        about = "Data-parallel loops over unstructured meshes on any GPU"
    )]
    struct Cli {
        #[command(subcommand)]
        command: Command,
    }

    #[derive(Subcommand)]
    enum Command {
        /// Execution-plan statistics for a mesh's indirect-increment loop: the unit square's
        /// cells incrementing their vertices (as the wave demo), or Airfoil's edges
        /// incrementing their cells (res_calc).
        Plan {
            /// `square:N` (2 N^2 triangles), `airfoil:I,J` (the NACA0012 C-grid), or the path
            /// of an OP2 new_grid.dat file.
            #[arg(default_value = "airfoil:400,600")]
            mesh: String,
            /// Elements per mini-partition (default: derived from workgroup memory).
            #[arg(long)]
            block_size: Option<usize>,
            /// Workgroup memory available for staging, in bytes.
            #[arg(long, default_value_t = 16384 - 2048)]
            workgroup_memory: usize,
            /// Stage all indirect data (default: only the incremented data).
            #[arg(long)]
            stage_all: bool,
            /// Pick the least-used allowed colour.
            #[arg(long)]
            balance: bool,
        },
        /// List the adapters found, the one parloop picks (PARLOOP_ADAPTER, PARLOOP_BACKEND),
        /// its key limits and features.
        Info,
        /// Measure everything on the adapter parloop picks (copy bandwidth, strategies,
        /// fusion, lazy evaluation, the wave, Airfoil) and print one markdown report.
        Bench {
            /// tiny (seconds: what CI runs), small (minutes on a software adapter) or full (the
            /// sizes the issue names: a GPU's).
            #[arg(long, default_value = "full", value_parser = ["tiny", "small", "full"])]
            size: String,
            /// Airfoil iterations per mesh (default: 5 tiny, 20 small, 1000 full).
            #[arg(long)]
            iterations: Option<usize>,
            /// Only these rows of the strategy tables (comma-separated: `auto` and the names of
            /// `parloop::Variant::ALL`).
            #[arg(long, value_delimiter = ',', value_parser = clap::builder::PossibleValuesParser::new(
                std::iter::once(parloop::Variant::AUTO).chain(parloop::Variant::ALL).map(|v| v.name())
            ))]
            strategies: Vec<String>,
            /// Only these sections (comma-separated): copy, triangles, res_calc,
            /// wave_strategies, layouts, modes, wave, airfoil, vectors, contention, solver (the
            /// copy bandwidth is always measured).
            #[arg(long, value_delimiter = ',', value_parser = clap::builder::PossibleValuesParser::new(crate::bench::SECTIONS))]
            sections: Vec<String>,
            /// Squares per side of the CG section's unit square ((N + 1)^2 unknowns; default:
            /// 30 tiny, 316 small, 1000 full).
            #[arg(long)]
            solver_n: Option<usize>,
            /// Only these types in the CG section (comma-separated: f32, f64; default: both,
            /// f64 where the adapter has it).
            #[arg(long, value_delimiter = ',', value_parser = ["f32", "f64"])]
            solver_types: Vec<String>,
        },
        /// Convert a Gmsh mesh (`.msh`) or OP2's Airfoil grid (`new_grid.dat`) into a parloop
        /// mesh file (HDF5), which every rank of a distributed run reads only its blocks of.
        /// A Gmsh mesh is written in MeshData's layout (`MeshData::read` reads it), each
        /// physical group as a set and a map `<group> (<parent>)`, and also as a set with map
        /// `<group>_cells` or `<group>_vertices` where those names are free.
        #[cfg(feature = "hdf5")]
        Convert {
            /// The mesh to read.
            input: PathBuf,
            /// The HDF5 file to write.
            output: PathBuf,
            /// Store coordinates (and Airfoil's state) as f32 (default: f64).
            #[arg(long)]
            f32: bool,
        },
        /// Partition a loop graph (JSON) into the fewest valid loops.
        Partition {
            /// The graph: {"nodes": [{"id", "location", "target", "cached", "reducing", "needs"}]}
            file: PathBuf,
            #[arg(long, default_value = "best", value_parser = parse_algorithm)]
            algorithm: Algorithm,
            #[arg(long, default_value = "json", value_parser = parse_format)]
            format: Format,
        },
    }

    fn parse_algorithm(s: &str) -> Result<Algorithm, String> {
        s.parse()
    }
    fn parse_format(s: &str) -> Result<Format, String> {
        s.parse()
    }

    /// Runs the CLI; returns the exit code (2 for bad input, with the message on stderr and
    /// nothing on stdout).
    pub fn main() -> i32 {
        let cli = match Cli::try_parse() {
            Ok(cli) => cli,
            Err(e) => {
                let code = if e.use_stderr() { 2 } else { 0 };
                let _ = e.print();
                return code;
            }
        };
        match run(cli.command) {
            Ok(out) => {
                // A reader that stops early (`| head`) closes the pipe: that is no error for a
                // command-line tool, so exit quietly as `cat` does.
                use std::io::Write;
                let mut stdout = std::io::stdout().lock();
                match stdout
                    .write_all(out.as_bytes())
                    .and_then(|()| stdout.flush())
                {
                    Ok(()) => 0,
                    Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => 0,
                    Err(e) => {
                        eprintln!("parloop: writing the output failed: {e}");
                        1
                    }
                }
            }
            Err(msg) => {
                eprintln!("parloop: {msg}");
                2
            }
        }
    }

    fn run(command: Command) -> Result<String, String> {
        match command {
            Command::Bench {
                size,
                iterations,
                strategies,
                sections,
                solver_n,
                solver_types,
            } => crate::bench::run(
                crate::bench::Sizes::named(&size, iterations, solver_n).solver_types(solver_types),
                &strategies,
                &sections,
            ),
            #[cfg(feature = "hdf5")]
            Command::Convert { input, output, f32 } => crate::convert::run(&input, &output, f32),
            Command::Info => {
                let config = parloop::Config::from_env().map_err(|e| e.to_string())?;
                Ok(pollster::block_on(parloop::adapter_report(
                    &config.adapter,
                    config.backends,
                )))
            }
            Command::Plan {
                mesh,
                block_size,
                workgroup_memory,
                stage_all,
                balance,
            } => plan_stats(&mesh, block_size, workgroup_memory, stage_all, balance),
            Command::Partition {
                file,
                algorithm,
                format,
            } => {
                let text = std::fs::read_to_string(&file)
                    .map_err(|e| format!("cannot read {}: {e}", file.display()))?;
                let g = Graph::from_json(&text).map_err(|e| format!("{}: {e}", file.display()))?;
                let p = graph::partition(
                    &g,
                    &graph::Options {
                        algorithm,
                        ..Default::default()
                    },
                );
                if let (Some(note), Format::Json | Format::Dot) = (&p.note, format) {
                    eprintln!("parloop: note: {note}");
                }
                Ok(p.render(&g, format))
            }
        }
    }

    /// The maps of the loop to plan: (iteration size, racing map, arity, target size, bytes per
    /// target when incremented, extra staged maps when staging all).
    struct LoopShape {
        what: String,
        positions: usize,
        map: Vec<u32>,
        arity: usize,
        targets: usize,
        inc_bytes: usize,
        read_maps: Vec<(Vec<u32>, usize, usize)>,
    }

    fn loop_shape(mesh: &str) -> Result<LoopShape, String> {
        if let Some(n) = mesh.strip_prefix("square:") {
            let n: usize = n.parse().map_err(|e| format!("square:{n}: {e}"))?;
            let m = parloop::mesh::unit_square(n);
            return Ok(LoopShape {
                what: format!(
                    "unit square {n}x{n}: {} cells incrementing {} vertices (arity 3, dim 1)",
                    m.ncells(),
                    m.nvertices()
                ),
                positions: m.ncells(),
                map: m.cell_vertices().to_vec(),
                arity: 3,
                targets: m.nvertices(),
                inc_bytes: 4,
                read_maps: vec![],
            });
        }
        let m = if let Some(ij) = mesh.strip_prefix("airfoil:") {
            let (i, j) = ij.split_once(',').ok_or("airfoil:I,J")?;
            let p = |v: &str| v.trim().parse::<usize>().map_err(|e| format!("{v:?}: {e}"));
            parloop::mesh::airfoil::naca0012(p(i)?, p(j)?)
        } else {
            let text =
                std::fs::read_to_string(mesh).map_err(|e| format!("cannot read {mesh}: {e}"))?;
            parloop::mesh::airfoil::AirfoilMesh::from_grid_dat(&text)
                .map_err(|e| format!("{mesh}: {e}"))?
        };
        let pedge: Vec<u32> = m.edges.iter().flatten().copied().collect();
        Ok(LoopShape {
            what: format!(
                "Airfoil res_calc: {} edges incrementing {} cells (pecell, arity 2, dim 4)",
                m.edges.len(),
                m.cells.len()
            ),
            positions: m.edges.len(),
            map: m.ecells.iter().flatten().copied().collect(),
            arity: 2,
            targets: m.cells.len(),
            inc_bytes: 16,
            // q (16 B) and adt (4 B) through pecell; x (8 B) through pedge.
            read_maps: vec![(pedge, 2, 8)],
        })
    }

    fn plan_stats(
        mesh: &str,
        block_size: Option<usize>,
        workgroup_memory: usize,
        stage_all: bool,
        balance: bool,
    ) -> Result<String, String> {
        use parloop::plan::{
            PlanConfig, PlanInput, RaceArg, StagedMap, build_blocks, colour_elements,
        };
        use std::fmt::Write;
        let shape = loop_shape(mesh)?;
        let mut staged = vec![StagedMap {
            map: &shape.map,
            arity: shape.arity,
            bytes_per_target: shape.inc_bytes
                + if stage_all && shape.inc_bytes == 16 {
                    20
                } else {
                    0
                },
            slots: None,
        }];
        if stage_all {
            for (m, arity, bytes) in &shape.read_maps {
                staged.push(StagedMap {
                    map: m,
                    arity: *arity,
                    bytes_per_target: *bytes,
                    slots: None,
                });
            }
        }
        let input = PlanInput {
            positions: shape.positions,
            elements: None,
            section_ends: vec![],
            space_sizes: vec![shape.targets],
            races: vec![RaceArg {
                space: 0,
                map: &shape.map,
                arity: shape.arity,
                idx: None,
                staged: Some(0),
            }],
            staged,
        };
        let config = PlanConfig {
            workgroup_memory,
            block_size,
            balance,
        };
        let t0 = std::time::Instant::now();
        let plan = build_blocks(&input, &config).map_err(|e| format!("{e:?}"))?;
        let build = t0.elapsed().as_secs_f64() * 1e3;
        let t1 = std::time::Instant::now();
        let colour = colour_elements(&input, balance);
        let build_colour = t1.elapsed().as_secs_f64() * 1e3;
        let st = plan.stats(&input);
        let mut s = String::new();
        let _ = writeln!(s, "loop: {}", shape.what);
        let _ = writeln!(
            s,
            "hierarchical plan ({} staging, {} colours, {workgroup_memory} B of workgroup memory):",
            if stage_all { "all" } else { "INC-only" },
            if balance { "balanced" } else { "first-fit" }
        );
        let _ = writeln!(
            s,
            "  blocks:              {} of {} elements",
            st.blocks, st.block_size
        );
        let _ = writeln!(s, "  block colours:       {}", st.block_colours);
        let _ = writeln!(
            s,
            "  thread colours:      max {}, mean {:.2} per block",
            st.thread_colours_max, st.thread_colours_mean
        );
        let _ = writeln!(
            s,
            "  staged bytes:        max {}, mean {:.0} per block",
            st.staged_bytes_max, st.staged_bytes_mean
        );
        let _ = writeln!(s, "  build time:          {build:.1} ms");
        let _ = writeln!(s, "global colouring (one level):");
        let _ = writeln!(s, "  colours:             {}", colour.colours());
        let _ = writeln!(s, "  build time:          {build_colour:.1} ms");
        Ok(s)
    }
}
