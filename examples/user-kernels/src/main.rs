//! `user-kernels`: the example crate's gate, `user-kernels axpby` (its options, checks and exit
//! status are every gate's: `user-kernels axpby --help`), run by the gates' harness as `gates`
//! runs the project's own.

use clap::Command;
use gates::harness::cli::{self, FamilyGate, Gate};
use std::process::ExitCode;
use user_kernels::gate::Axpby;

fn main() -> ExitCode {
    let gate = FamilyGate::<Axpby>::new();
    let cmd = Command::new("user-kernels")
        .about("The example kernel crate's gate: its Rust build against its .cu twin")
        .subcommand_required(true)
        .subcommand(gate.command());
    let matches = cli::matches(cmd);
    let (_, sub) = matches.subcommand().expect("clap requires a subcommand");
    cli::exit_code("user-kernels", gate.run(sub).map(|o| o.failed == 0))
}
