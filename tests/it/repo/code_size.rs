//! Functions and files stay short enough to read whole: no function in
//! `src/` over [`MAX_FN_LINES`] lines (its `fn` signature to its closing
//! brace; test code left out: inline `#[cfg(test)]` items and the files
//! only such a module compiles) and no file over [`MAX_FILE_LINES`], its
//! tests included. The
//! allowlist names each exception exactly and fails once one fits, so it
//! can only shrink.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use syn::spanned::Spanned;

use super::layers::rust_files;
use syn::visit::Visit;

const MAX_FN_LINES: usize = 80;
const MAX_FILE_LINES: usize = 600;

/// Over the limits for now, each `(file, item)`: a function as its path
/// within the file (`Type::method`, `outer::inner`), a whole file as `""`.
/// Remove an entry when its item fits.
const ALLOWED: &[(&str, &str)] = &[];

/// Something in `src/` over its limit.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Long {
    file: String,
    item: String,
    lines: usize,
}

impl Long {
    fn key(&self) -> (&str, &str) {
        (&self.file, &self.item)
    }
}

impl std::fmt::Display for Long {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.item.is_empty() {
            write!(f, "{}: {} lines (at most {MAX_FILE_LINES})", self.file, self.lines)
        } else {
            write!(f, "{} `{}`: {} lines (at most {MAX_FN_LINES})", self.file, self.item, self.lines)
        }
    }
}

fn is_cfg_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|attr| {
        attr.path().is_ident("cfg")
            && attr.meta.require_list().is_ok_and(|list| {
                list.tokens.to_string().split(|c: char| !c.is_alphanumeric() && c != '_').any(|word| word == "test")
            })
    })
}

/// Walks one file's items: its functions' lengths, the lines of its
/// inline test code, and the out-of-line modules it compiles only for tests.
#[derive(Default)]
struct Measure {
    path: Vec<String>,
    functions: Vec<(String, usize)>,
    test_lines: usize,
    test_modules: Vec<String>,
}

impl Measure {
    fn function(&mut self, name: &syn::Ident, sig: &syn::Signature, body: &syn::Block, visit: impl FnOnce(&mut Self)) {
        let lines = body.brace_token.span.close().end().line - sig.fn_token.span().start().line + 1;
        self.within(name.to_string(), |this| {
            this.functions.push((this.path.join("::"), lines));
            visit(this);
        });
    }

    /// Visits what is inside the item `name` (a module, type, trait or function).
    fn within(&mut self, name: String, visit: impl FnOnce(&mut Self)) {
        self.path.push(name);
        visit(self);
        self.path.pop();
    }

    /// Skips an item compiled only for tests, counting its lines; true if it did.
    fn skip_test(&mut self, attrs: &[syn::Attribute], item: &impl Spanned) -> bool {
        if !is_cfg_test(attrs) {
            return false;
        }
        let start = attrs.first().map_or(item.span().start().line, |attr| attr.span().start().line);
        self.test_lines += item.span().end().line - start + 1;
        true
    }
}

impl<'ast> Visit<'ast> for Measure {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        let attrs = match item {
            syn::Item::Fn(i) => &i.attrs,
            syn::Item::Impl(i) => &i.attrs,
            syn::Item::Mod(i) => &i.attrs,
            syn::Item::Trait(i) => &i.attrs,
            syn::Item::Use(i) => &i.attrs,
            syn::Item::Const(i) => &i.attrs,
            syn::Item::Static(i) => &i.attrs,
            syn::Item::Struct(i) => &i.attrs,
            syn::Item::Enum(i) => &i.attrs,
            syn::Item::Macro(i) => &i.attrs,
            _ => return syn::visit::visit_item(self, item),
        };
        if let syn::Item::Mod(module) = item
            && module.content.is_none()
            && is_cfg_test(attrs)
        {
            self.test_modules.push(module.ident.to_string());
            return;
        }
        if !self.skip_test(attrs, item) {
            syn::visit::visit_item(self, item);
        }
    }

    fn visit_item_fn(&mut self, item: &'ast syn::ItemFn) {
        self.function(&item.sig.ident, &item.sig, &item.block, |this| syn::visit::visit_item_fn(this, item));
    }

    fn visit_item_mod(&mut self, item: &'ast syn::ItemMod) {
        self.within(item.ident.to_string(), |this| syn::visit::visit_item_mod(this, item));
    }

    fn visit_item_impl(&mut self, item: &'ast syn::ItemImpl) {
        let name = match &*item.self_ty {
            syn::Type::Path(ty) => ty.path.segments.last().map_or(String::new(), |s| s.ident.to_string()),
            _ => "_".to_string(),
        };
        self.within(name, |this| syn::visit::visit_item_impl(this, item));
    }

    fn visit_impl_item_fn(&mut self, item: &'ast syn::ImplItemFn) {
        if !self.skip_test(&item.attrs, item) {
            self.function(&item.sig.ident, &item.sig, &item.block, |this| syn::visit::visit_impl_item_fn(this, item));
        }
    }

    fn visit_item_trait(&mut self, item: &'ast syn::ItemTrait) {
        self.within(item.ident.to_string(), |this| syn::visit::visit_item_trait(this, item));
    }

    fn visit_trait_item_fn(&mut self, item: &'ast syn::TraitItemFn) {
        match &item.default {
            Some(body) => {
                self.function(&item.sig.ident, &item.sig, body, |this| syn::visit::visit_trait_item_fn(this, item))
            }
            None => syn::visit::visit_trait_item_fn(self, item),
        }
    }
}

/// The file a `#[cfg(test)] mod name;` in `file` compiles (`name.rs`, or
/// `name/` with its `mod.rs`): beside a `mod.rs`, `lib.rs` or `main.rs`,
/// else in a directory named after the file.
fn test_module_path(file: &Path, name: &str) -> PathBuf {
    let stem = file.file_stem().unwrap().to_string_lossy();
    let dir = file.parent().unwrap();
    let base = if ["mod", "lib", "main"].contains(&stem.as_ref()) { dir.to_path_buf() } else { dir.join(&*stem) };
    let as_file = base.join(format!("{name}.rs"));
    if as_file.exists() { as_file } else { base.join(name) }
}

/// Everything in `src/` over its limit, test code left out.
fn measure_src() -> Vec<Long> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    files.sort();
    let mut measured = Vec::new();
    let mut test_only = Vec::new();
    for file in &files {
        let source = std::fs::read_to_string(file).unwrap();
        let parsed = syn::parse_file(&source).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let mut measure = Measure::default();
        measure.visit_file(&parsed);
        test_only.extend(measure.test_modules.iter().map(|name| test_module_path(file, name)));
        measured.push((file, source.lines().count(), measure));
    }
    let mut long = Vec::new();
    for (file, lines, measure) in measured {
        let name = file.strip_prefix(root).unwrap().to_string_lossy().into_owned();
        if lines > MAX_FILE_LINES {
            long.push(Long { file: name.clone(), item: String::new(), lines });
        }
        // A test module's file, or one of its own modules (`tests/x.rs`).
        if test_only.iter().any(|test| file.starts_with(test) || file.starts_with(test.with_extension(""))) {
            continue;
        }
        for (item, lines) in measure.functions {
            if lines > MAX_FN_LINES {
                long.push(Long { file: name.clone(), item, lines });
            }
        }
    }
    long.sort();
    long
}

#[test]
fn no_function_or_file_in_src_is_over_its_limit() {
    let long = measure_src();
    let allowed: BTreeSet<(&str, &str)> = ALLOWED.iter().copied().collect();
    let over: Vec<String> = long.iter().filter(|l| !allowed.contains(&l.key())).map(|l| format!("  {l}")).collect();
    let found: BTreeSet<(&str, &str)> = long.iter().map(Long::key).collect();
    let fit: Vec<String> = allowed.difference(&found).map(|(file, item)| format!("  {file} `{item}`")).collect();
    println!("{} over the limits, {} of them allowed:", long.len(), allowed.len());
    for l in &long {
        println!("  {l}");
    }
    assert!(
        over.is_empty() && fit.is_empty(),
        "over the limits (split them into well-named functions or modules):\n{}\n\
         allowed in tests/it/repo/code_size.rs but now within the limits (remove them from ALLOWED):\n{}",
        over.join("\n"),
        fit.join("\n"),
    );
}

#[test]
fn the_measure_counts_signature_to_brace_and_leaves_tests_out() {
    let source = "fn a() {\n    1;\n}\n\nimpl S {\n    pub fn b(\n        x: u8,\n    ) {\n    }\n}\n\n#[cfg(test)]\nmod tests {\n    fn c() {}\n}\n#[cfg(test)]\nmod more;\n";
    let mut measure = Measure::default();
    measure.visit_file(&syn::parse_file(source).unwrap());
    assert_eq!(measure.functions, [("a".to_string(), 3), ("S::b".to_string(), 4)]);
    assert_eq!(measure.test_lines, 4);
    assert_eq!(measure.test_modules, ["more"]);
}
