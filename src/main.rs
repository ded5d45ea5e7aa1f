#![deny(unsafe_code)]

fn main() -> std::process::ExitCode {
    match relay::cli::parse() {
        Ok(cli) => relay::cli::main(cli),
        Err(error) => relay::cli::argument_error(error),
    }
}
