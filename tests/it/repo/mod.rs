//! The repository against itself: `src/`'s modules keep their layers, the
//! docs (README.md, docs/) show what this build prints and list what the
//! code has, and the example home is one relay reads as it is. A test here
//! reads the repository's files (from `CARGO_MANIFEST_DIR`) and may run the
//! built binary to compare what a document shows with what it prints; it
//! checks a file of the repository, not a behaviour (that is `e2e`).

mod code_size;
mod docs;
mod example_home;
mod layers;
