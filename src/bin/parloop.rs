//! The `parloop` command line: `info` (adapters and limits), `partition` (the loop-graph
//! partitioner on a JSON graph), `plan` (execution-plan statistics for a mesh).

#[cfg(target_arch = "wasm32")]
fn main() {}

#[cfg(not(target_arch = "wasm32"))]
fn main() {
    std::process::exit(cli::main());
}

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
        /// List the adapters found, the one parloop picks (PARLOOP_ADAPTER, PARLOOP_BACKEND),
        /// its key limits and features.
        Info,
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
                print!("{out}");
                0
            }
            Err(msg) => {
                eprintln!("parloop: {msg}");
                2
            }
        }
    }

    fn run(command: Command) -> Result<String, String> {
        match command {
            Command::Info => {
                let choice = parloop::runtime::AdapterChoice::parse(
                    &std::env::var("PARLOOP_ADAPTER").unwrap_or_default(),
                );
                Ok(pollster::block_on(parloop::runtime::device::report(
                    &choice,
                )))
            }
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
}
