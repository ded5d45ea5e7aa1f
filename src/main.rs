use clap::Parser;

fn main() -> std::process::ExitCode {
    relay::cli::main(relay::cli::Cli::parse())
}
