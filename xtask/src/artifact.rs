//! `cargo xtask artifact`: the kernels, compiled once here and committed, so
//! that users of `gpuprim` build on stable with no nightly, ptxas or CUDA.
//!
//! 1. Builds `kernels/` to PTX with the pinned nightly's NVPTX backend for
//!    `sm_70` (PTX `.version 7.0`, which every driver since Volta loads),
//!    with the `testing` feature.
//! 2. Checks that the PTX calls no function it does not define.
//! 3. Splits it into modules, one per kernel family and type: an entry's key
//!    is its name without a trailing `_b<digits>` (the block size). A module
//!    holds the header, the top-level declarations its entries use
//!    (transitively) and its entries, in their original order.
//! 4. Assembles every shipped module with ptxas for `sm_80` and `sm_90`.
//!    For `sm_90`, a module whose kernels left grid-dependency comments
//!    (`gpu::grid_dependency_wait`, `gpu::launch_dependents`) is assembled
//!    from its PTX with those made `griddepcontrol` instructions, under
//!    `.version 7.8` and `.target sm_90` (what they need); the shipped PTX
//!    and the `sm_80` machine code keep the comments.
//! 5. Writes zstd-compressed containers (see [`encode`]) and a manifest:
//!    `host/kernels/{ptx,sm_80,sm_90}.zst` and `MANIFEST.txt` (shipped in the
//!    `gpuprim` crate) and `tests/kernels/testing.ptx.zst` (the modules whose
//!    key starts with `testing_`: kernels that misbehave on purpose, PTX
//!    only, for the tests).
//!
//! `--check` builds the same (in `target/artifact/`), writes nothing outside
//! `target/`, and compares the contents of the containers (not the
//! compressed bytes) and the manifest with the committed files.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Instant;

use anyhow::{Context, Result, bail, ensure};

use crate::ptx;
use crate::setup::Setup;
use crate::util::{self, Repo};

/// The PTX target: `.version 7.0 .target sm_70` loads on every GPU from Volta on.
pub const PTX_ARCH: &str = "sm_70";
/// Machine code shipped next to the PTX.
pub const CUBIN_ARCHS: [&str; 2] = ["sm_80", "sm_90"];
/// Container magic (format version 01).
pub const MAGIC: &[u8; 8] = b"GPKMOD01";
/// zstd level of the committed files.
const ZSTD_LEVEL: i32 = 19;
/// ptxas processes at a time (CI runs on two cores).
const JOBS: usize = 2;
/// Modules whose key starts with this hold the deliberately faulty kernels
/// of `kernels/src/testing.rs`: PTX for the tests only, never shipped.
const TESTING_PREFIX: &str = "testing_";

/// The nested build's own target directory, and where the whole PTX is
/// copied (`cargo xtask ptx` reads it there).
const BUILD_DIR: &str = "target/artifact/build";
pub const PTX_FILE: &str = "target/artifact/gpuprim-kernels.ptx";
/// Per-module PTX and cubins, for reading and for ptxas.
const MODULES_DIR: &str = "target/artifact/modules";
/// Where `--check` writes the manifest it expects.
const CHECK_MANIFEST: &str = "target/artifact/MANIFEST.txt";

const PTX_ZST: &str = "host/kernels/ptx.zst";
const MANIFEST: &str = "host/kernels/MANIFEST.txt";
const TESTING_ZST: &str = "tests/kernels/testing.ptx.zst";

fn cubin_file(arch: &str) -> String {
    format!("host/kernels/{arch}.zst")
}

#[derive(clap::Args, Debug, Clone)]
pub struct ArtifactArgs {
    /// Rebuild into target/artifact/check and compare with the committed
    /// files instead of writing them; fail on any difference.
    #[arg(long)]
    pub check: bool,
    /// For experiments: build the PTX, assemble only the modules whose key
    /// contains this text (sm_90, `ptxas -v`), print each entry's
    /// registers, stack and spills, and write nothing else.
    #[arg(long, conflicts_with = "check")]
    pub only: Option<String>,
}

pub fn run(repo: &Repo, setup: &Setup, args: &ArtifactArgs) -> Result<()> {
    let start = Instant::now();
    let ptx_path = build_ptx(repo)?;
    let ptx = fs::read_to_string(&ptx_path).with_context(|| format!("reading {}", ptx_path.display()))?;
    check_resolved(&ptx)?;
    let parsed = parse(&ptx).with_context(|| format!("splitting {}", repo.rel(&ptx_path)))?;
    let modules = split(&parsed)?;
    if let Some(only) = &args.only {
        return report_only(setup, repo, &modules, only);
    }
    let (testing, shipped): (Vec<&Module>, Vec<&Module>) =
        modules.iter().partition(|m| m.key.starts_with(TESTING_PREFIX));
    ensure!(!shipped.is_empty(), "the kernels' PTX has no shipped modules");
    println!(
        "artifact: {} entries -> {} shipped modules ({} entries), {} testing modules ({} entries)",
        parsed.entries().count(),
        shipped.len(),
        shipped.iter().map(|m| m.entries.len()).sum::<usize>(),
        testing.len(),
        testing.iter().map(|m| m.entries.len()).sum::<usize>(),
    );

    // Module files for ptxas (and for reading).
    let dir = repo.root.join(MODULES_DIR);
    if dir.exists() {
        fs::remove_dir_all(&dir).with_context(|| format!("removing {}", dir.display()))?;
    }
    fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    for m in &modules {
        let path = dir.join(format!("{}.ptx", m.key));
        fs::write(&path, &m.ptx).with_context(|| format!("writing {}", path.display()))?;
    }

    // Every shipped module for every arch; testing modules once, to check
    // that they are valid PTX (their machine code is not kept).
    let mut jobs: Vec<Job> = Vec::new();
    for m in &shipped {
        for arch in CUBIN_ARCHS {
            jobs.push(Job { key: m.key.clone(), arch, keep: true });
        }
    }
    for m in &testing {
        jobs.push(Job { key: m.key.clone(), arch: CUBIN_ARCHS[0], keep: false });
    }
    let t = Instant::now();
    let cubins = assemble_all(&setup.ptxas, &dir, &jobs)?;
    println!(
        "artifact: ptxas: {} modules for {} and {} testing modules checked, {JOBS} at a time ({})",
        shipped.len(),
        CUBIN_ARCHS.join(", "),
        testing.len(),
        util::secs(t.elapsed())
    );

    // The containers.
    let mut files: Vec<(String, Container)> = Vec::new();
    files.push((PTX_ZST.into(), shipped.iter().map(|m| (m.key.clone(), m.ptx.clone().into_bytes())).collect()));
    for arch in CUBIN_ARCHS {
        let c: Container = shipped
            .iter()
            .map(|m| {
                let data = cubins.get(&(m.key.clone(), arch)).cloned().context("a cubin is missing")?;
                Ok((m.key.clone(), data))
            })
            .collect::<Result<_>>()?;
        files.push((cubin_file(arch), c));
    }
    files.push((TESTING_ZST.into(), testing.iter().map(|m| (m.key.clone(), m.ptx.clone().into_bytes())).collect()));
    let encoded: Vec<Vec<u8>> = files.iter().map(|(_, c)| encode(c)).collect::<Result<_>>()?;

    let toolchain = toolchain_line(repo)?;
    let ptxas_version = ptxas_version(&setup.ptxas)?;
    let info = ManifestInfo { toolchain, ptxas: ptxas_version, modules: &modules };

    if args.check {
        // No compression: the containers' contents are compared, and the
        // manifest's compressed sizes are those of the committed files.
        let result = check(repo, &info, &files, &encoded);
        println!("artifact: --check took {}", util::secs(start.elapsed()));
        result
    } else {
        let t = Instant::now();
        let compressed = compress_all(&encoded)?;
        println!("artifact: compressed ({})", util::secs(t.elapsed()));
        for ((rel, _), bytes) in files.iter().zip(&compressed) {
            write_file(&repo.root.join(rel), bytes)?;
        }
        let sizes: Vec<(usize, usize)> = encoded.iter().zip(&compressed).map(|(r, z)| (r.len(), z.len())).collect();
        let text = manifest(&info, &files, &sizes);
        write_file(&repo.root.join(MANIFEST), text.as_bytes())?;
        for ((rel, _), (raw, z)) in files.iter().zip(encoded.iter().zip(&compressed)) {
            println!("artifact: wrote {rel}: {} bytes ({} uncompressed)", z.len(), raw.len());
        }
        println!("artifact: wrote {MANIFEST} ({})", util::secs(start.elapsed()));
        Ok(())
    }
}

/// `--only`: the matching modules' `ptxas -v` report for sm_90, entries
/// only, as `cargo xtask ptx` prints them.
fn report_only(setup: &Setup, repo: &Repo, modules: &[Module], only: &str) -> Result<()> {
    let dir = repo.root.join(MODULES_DIR).join("only");
    fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut entries = BTreeMap::new();
    for m in modules.iter().filter(|m| m.key.contains(only)) {
        let path = dir.join(format!("{}.ptx", m.key));
        fs::write(&path, &m.ptx).with_context(|| format!("writing {}", path.display()))?;
        let mut cmd = Command::new(&setup.ptxas);
        cmd.args(["--gpu-name", "sm_90", "-v", "-o"]).arg(dir.join(format!("{}.cubin", m.key))).arg(&path);
        let out = util::capture(&mut cmd)?;
        let report = String::from_utf8_lossy(&out.stderr);
        ensure!(out.status.success(), "ptxas failed on {} ({}):\n{}", m.key, out.status, report.trim_end());
        entries.extend(ptx::parse_report(&report).into_iter().filter(|(_, r)| r.entry));
    }
    ensure!(!entries.is_empty(), "no module key contains {only:?}");
    ptx::print_table(&entries.iter().collect::<Vec<_>>());
    Ok(())
}

// ---------------------------------------------------------------------------
// Building the PTX

/// Compiles `kernels/` (with the `testing` feature) to one PTX file for
/// [`PTX_ARCH`], copies it to [`PTX_FILE`] and returns that path.
pub fn build_ptx(repo: &Repo) -> Result<PathBuf> {
    let target_dir = repo.root.join(BUILD_DIR);
    let mut cmd = repo.cargo();
    cmd.args(["rustc", "-p", "gpuprim-kernels", "--release", "--target", "nvptx64-nvidia-cuda"])
        .args(["-Zbuild-std=core", "--config", "profile.release.debug=false", "--features", "testing"])
        .arg("--target-dir")
        .arg(&target_dir)
        .args(["--", "--emit=asm"])
        .env("RUSTFLAGS", format!("-Zunstable-options -Cpanic=immediate-abort -Ctarget-cpu={PTX_ARCH}"));
    // Nothing of a parent build (flags for the host target, wrappers, the
    // jobserver) may leak into this one.
    for var in gpuprim_builder::BUILD_VARS {
        cmd.env_remove(var);
    }
    util::run(&mut cmd)
        .context("compiling kernels/ to PTX failed (it needs the pinned nightly with rust-src; `cargo xtask setup`)")?;
    let deps = target_dir.join("nvptx64-nvidia-cuda").join("release").join("deps");
    // One configuration builds into this directory, so there is normally one
    // such file; after a toolchain change the newest is the current one.
    let newest = fs::read_dir(&deps)
        .with_context(|| format!("no PTX output in {}", deps.display()))?
        .filter_map(Result::ok)
        .filter(|e| {
            let name = e.file_name();
            let name = name.to_string_lossy();
            name.starts_with("gpuprim_kernels-") && name.ends_with(".s")
        })
        .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
        .max()
        .map(|(_, p)| p)
        .with_context(|| format!("the PTX build wrote no gpuprim_kernels-*.s in {}", deps.display()))?;
    let dest = repo.root.join(PTX_FILE);
    let ptx = fs::read_to_string(&newest).with_context(|| format!("reading {}", newest.display()))?;
    // The kernels' register caps become `.maxnreg` directives, as
    // `gpuprim-builder` makes them for a kernels crate of a user's.
    let ptx = gpuprim_builder::apply_register_caps(&ptx).map_err(|functions| {
        anyhow::anyhow!(
            "kernels/ caps the registers of {functions:?}, which are not kernels: call `gpu::max_registers` \
             from the kernel body or from #[inline(always)] functions"
        )
    })?;
    fs::write(&dest, ptx).with_context(|| format!("writing {}", dest.display()))?;
    Ok(dest)
}

/// Fails if the PTX calls or declares a function it does not define: the
/// driver would reject the module at load time.
pub fn check_resolved(ptx: &str) -> Result<()> {
    let unresolved = gpuprim_builder::unresolved_calls(ptx);
    if !unresolved.is_empty() {
        bail!(
            "the kernels' PTX references functions it does not define (the driver would refuse to load it). \
             Usually a panic path or a float intrinsic that nvptx64 cannot lower.\nfunctions: {unresolved:?}"
        );
    }
    Ok(())
}

/// The name in the text after `.func`: ` (.param .b32 ret) name(` or ` name(`.
fn func_name(rest: &str) -> String {
    let rest = rest.trim();
    let rest = if rest.starts_with('(') { rest.split_once(')').map(|(_, r)| r).unwrap_or(rest) } else { rest };
    rest.trim().split(['(', ' ', ';']).next().unwrap_or("").to_string()
}

// ---------------------------------------------------------------------------
// Splitting

/// A PTX file: its header directives and its top-level items, in order.
#[derive(Debug)]
pub struct Parsed {
    /// `.version`, `.target`, `.address_size`, verbatim.
    pub header: Vec<String>,
    pub items: Vec<Item>,
}

impl Parsed {
    pub fn entries(&self) -> impl Iterator<Item = &Item> {
        self.items.iter().filter(|i| i.kind == Kind::Entry)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `.entry` (a kernel).
    Entry,
    /// `.func` definition or prototype.
    Func,
    /// `.global`, `.shared`, `.const` variable (or its `.extern` declaration).
    Var,
}

/// One top-level construct.
#[derive(Debug)]
pub struct Item {
    pub kind: Kind,
    pub name: String,
    /// Its lines, verbatim, without the trailing newline.
    pub text: String,
    /// A `// .globl name` comment named it.
    pub globl: bool,
}

/// Identifier tokens of PTX text, comments stripped.
fn tokens(text: &str) -> impl Iterator<Item = &str> {
    text.lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .flat_map(|l| l.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '$')))
        .filter(|t| !t.is_empty())
}

fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '$')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
}

/// Rewrites the identifier tokens of `text` with `f` (`None`: keep it).
fn rewrite_tokens(text: &str, mut f: impl FnMut(&str) -> Result<Option<String>>) -> Result<String> {
    let mut out = String::with_capacity(text.len());
    let mut start: Option<usize> = None;
    let mut flush = |out: &mut String, tok: &str| -> Result<()> {
        match f(tok)? {
            Some(new) => out.push_str(&new),
            None => out.push_str(tok),
        }
        Ok(())
    };
    for (i, c) in text.char_indices() {
        let ident = c.is_ascii_alphanumeric() || c == '_' || c == '$';
        match (start, ident) {
            (None, true) => start = Some(i),
            (Some(s), false) => {
                flush(&mut out, &text[s..i])?;
                start = None;
                out.push(c);
            }
            (None, false) => out.push(c),
            (Some(_), true) => {}
        }
    }
    if let Some(s) = start {
        flush(&mut out, &text[s..])?;
    }
    Ok(out)
}

/// Renames LLVM's anonymous globals, `anon_$_<hash>_$_<n>`, to `anon_$_<k>`
/// (k in order of first appearance). The hash is of the names the whole
/// crate exports, so without this adding any kernel would change every
/// module that uses such a global.
fn normalise_anon(ptx: &str) -> Result<String> {
    let mut names: BTreeMap<String, String> = BTreeMap::new();
    rewrite_tokens(ptx, |tok| {
        let Some(rest) = tok.strip_prefix("anon_$_") else { return Ok(None) };
        if let Some(new) = names.get(tok) {
            return Ok(Some(new.clone()));
        }
        let (hash, n) = rest.split_once("_$_").unwrap_or(("", ""));
        ensure!(
            !hash.is_empty()
                && hash.bytes().all(|b| b.is_ascii_hexdigit())
                && !n.is_empty()
                && n.bytes().all(|b| b.is_ascii_digit()),
            "an anonymous global of a form the splitter does not know: {tok}"
        );
        let new = format!("anon_$_{}", names.len());
        names.insert(tok.to_string(), new.clone());
        Ok(Some(new))
    })
}

/// LLVM numbers the labels (`$L__BB<f>_<n>`) and the stack (`__local_depot<f>`)
/// of a function by the function's place in the whole PTX; in a module
/// they are numbered by its place there (`index`), so that adding a kernel
/// does not change every module after it. Jump-table labels (`$L_brx_<n>`)
/// are numbered per function and stay. Any other `$L` name is refused.
fn renumber(item: &Item, index: usize) -> Result<String> {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let mut number: Option<String> = None;
    let mut same = |f: &str| -> Result<()> {
        match &number {
            Some(n) => ensure!(n == f, "{}: labels or stacks of two functions ({n}, {f})", item.name),
            None => number = Some(f.to_string()),
        }
        Ok(())
    };
    rewrite_tokens(&item.text, |tok| {
        if let Some(rest) = tok.strip_prefix("$L__BB") {
            let (f, n) = rest.split_once('_').unwrap_or(("", ""));
            ensure!(digits(f) && digits(n), "{}: a label the splitter does not know: {tok}", item.name);
            same(f)?;
            Ok(Some(format!("$L__BB{index}_{n}")))
        } else if let Some(f) = tok.strip_prefix("__local_depot") {
            ensure!(digits(f), "{}: a stack the splitter does not know: {tok}", item.name);
            same(f)?;
            Ok(Some(format!("__local_depot{index}")))
        } else if tok.strip_prefix("$L_brx_").is_some_and(digits) {
            // A jump table's target list (`brx.idx`), numbered within its
            // function already: kept as it is.
            Ok(None)
        } else if tok.starts_with("$L") {
            bail!("{}: a label the splitter does not know: {tok}", item.name)
        } else {
            Ok(None)
        }
    })
}

/// Parses the top level of rustc's PTX. Anything it does not know (a
/// directive other than the header, variables, `.entry` and `.func`, text
/// outside a body, an unterminated body) is an error, not a guess.
pub fn parse(ptx: &str) -> Result<Parsed> {
    let ptx = normalise_anon(ptx)?;
    let lines: Vec<&str> = ptx.lines().collect();
    let mut header: Vec<String> = Vec::new();
    let mut items: Vec<Item> = Vec::new();
    let mut globls: Vec<(usize, String)> = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let l = line.trim();
        let lineno = i + 1;
        if l.is_empty() {
            i += 1;
            continue;
        }
        if let Some(comment) = l.strip_prefix("//") {
            let words: Vec<&str> = comment.split_whitespace().collect();
            if words.first() == Some(&".globl") {
                ensure!(words.len() == 2, "line {lineno}: unexpected .globl comment: {l}");
                globls.push((lineno, words[1].to_string()));
            }
            i += 1;
            continue;
        }
        let words: Vec<&str> = l.split_whitespace().collect();
        match words[0] {
            ".version" | ".target" | ".address_size" => {
                ensure!(items.is_empty(), "line {lineno}: {} after the first declaration", words[0]);
                ensure!(
                    !header.iter().any(|h| h.split_whitespace().next() == Some(words[0])),
                    "line {lineno}: a second {}",
                    words[0]
                );
                header.push(l.to_string());
                i += 1;
                continue;
            }
            _ => {}
        }
        // Linkage, then the kind of declaration.
        let mut k = 0;
        while k < words.len() && matches!(words[k], ".visible" | ".extern" | ".weak" | ".common") {
            k += 1;
        }
        let kind = match words.get(k).copied() {
            Some(w) if w == ".entry" || w.starts_with(".entry(") => Kind::Entry,
            Some(w) if w == ".func" || w.starts_with(".func(") => Kind::Func,
            Some(".global" | ".shared" | ".const") => Kind::Var,
            _ => bail!("line {lineno}: top-level PTX the splitter does not know: {l}"),
        };
        let start = i;
        match kind {
            Kind::Var => {
                // Up to the `;` that ends it (an initialiser may span lines).
                while !lines[i].trim_end().ends_with(';') {
                    i += 1;
                    ensure!(i < lines.len(), "line {lineno}: declaration without `;`");
                }
                let text = lines[start..=i].join("\n");
                let decl = text.split(['[', '=', ';']).next().unwrap_or("");
                let name = decl.split_whitespace().last().unwrap_or("").to_string();
                ensure!(is_identifier(&name) && !name.starts_with('.'), "line {lineno}: cannot find the name of: {l}");
                items.push(Item { kind, name, text, globl: false });
                i += 1;
            }
            Kind::Entry | Kind::Func => {
                let after = l.split_once(if kind == Kind::Entry { ".entry" } else { ".func" }).map_or("", |x| x.1);
                let name = if kind == Kind::Entry {
                    after.trim().split(['(', ' ', ';']).next().unwrap_or("").to_string()
                } else {
                    func_name(after)
                };
                ensure!(is_identifier(&name), "line {lineno}: cannot find the name of: {l}");
                // The signature runs to a `{` line (a definition) or to a
                // line ending in `;` (a prototype).
                let mut prototype = false;
                loop {
                    let t = lines[i].split("//").next().unwrap_or("").trim();
                    if t == "{" {
                        break;
                    }
                    ensure!(!t.contains('{') && !t.contains('}'), "line {}: unexpected brace in a signature", i + 1);
                    if t.ends_with(';') {
                        prototype = true;
                        break;
                    }
                    i += 1;
                    ensure!(i < lines.len(), "line {lineno}: {name}: signature without a body");
                }
                if prototype {
                    ensure!(kind == Kind::Func, "line {lineno}: .entry {name} without a body");
                } else {
                    // The body ends at the first `}` in column 0, where the
                    // braces (comments stripped) must balance.
                    let mut depth: i64 = 0;
                    loop {
                        let raw = lines[i];
                        for c in raw.split("//").next().unwrap_or("").chars() {
                            match c {
                                '{' => depth += 1,
                                '}' => depth -= 1,
                                _ => {}
                            }
                        }
                        ensure!(depth >= 0, "line {}: unbalanced `}}` in {name}", i + 1);
                        if raw.trim_end() == "}" && !raw.starts_with(char::is_whitespace) {
                            ensure!(depth == 0, "line {}: `}}` in column 0 inside a block of {name}", i + 1);
                            break;
                        }
                        i += 1;
                        ensure!(i < lines.len(), "line {lineno}: {name}: body without its closing `}}`");
                    }
                }
                items.push(Item { kind, name, text: lines[start..=i].join("\n"), globl: false });
                i += 1;
            }
        }
    }
    for h in [".version", ".target", ".address_size"] {
        ensure!(header.iter().any(|l| l.split_whitespace().next() == Some(h)), "the PTX has no {h}");
    }
    // Names: entries are unique; a function may have a prototype and a
    // definition; nothing shares an entry's name.
    let mut by_name: BTreeMap<&str, Vec<Kind>> = BTreeMap::new();
    for it in &items {
        by_name.entry(&it.name).or_default().push(it.kind);
    }
    for (name, kinds) in &by_name {
        let ok = kinds.len() == 1 || kinds.iter().all(|k| *k == Kind::Func) && kinds.len() == 2;
        ensure!(ok, "the PTX declares {name} {} times ({kinds:?})", kinds.len());
    }
    for (lineno, name) in globls {
        let found = items.iter_mut().find(|it| it.name == name);
        let item = found.with_context(|| format!("line {lineno}: `// .globl {name}` names nothing declared"))?;
        item.globl = true;
    }
    Ok(Parsed { header, items })
}

/// An entry's name split at its trailing `_b<digits>` (the block size it
/// is launched with): the name before it and the digits.
pub fn split_block(entry: &str) -> Option<(&str, &str)> {
    let i = entry.rfind("_b")?;
    let digits = &entry[i + 2..];
    (!digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())).then(|| (&entry[..i], digits))
}

/// The module key of an entry: its name without a trailing `_b<digits>`.
pub fn group_key(entry: &str) -> &str {
    split_block(entry).map_or(entry, |(key, _)| key)
}

/// One module: its key, entry names and PTX text.
#[derive(Debug)]
pub struct Module {
    pub key: String,
    pub entries: Vec<String>,
    pub ptx: String,
}

/// Splits the PTX into modules by [`group_key`], sorted by key.
pub fn split(parsed: &Parsed) -> Result<Vec<Module>> {
    let names: BTreeSet<&str> = parsed.items.iter().map(|it| it.name.as_str()).collect();
    let entry_key: BTreeMap<&str, &str> = parsed.entries().map(|e| (e.name.as_str(), group_key(&e.name))).collect();
    // The declared names each item mentions.
    let refs: Vec<BTreeSet<&str>> = parsed
        .items
        .iter()
        .map(|it| tokens(&it.text).filter(|t| *t != it.name && names.contains(t)).collect())
        .collect();
    let mut groups: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, it) in parsed.items.iter().enumerate() {
        if it.kind == Kind::Entry {
            groups.entry(group_key(&it.name)).or_default().push(i);
        }
    }
    let mut modules = Vec::new();
    for (key, entries) in &groups {
        // The names this module needs, transitively.
        let mut needed: BTreeSet<&str> = BTreeSet::new();
        let mut stack: Vec<usize> = entries.clone();
        while let Some(i) = stack.pop() {
            for name in &refs[i] {
                if let Some(other) = entry_key.get(name) {
                    if other != key {
                        bail!(
                            "{} refers to the entry {name} of another module ({other}); \
                             the splitter does not know how to split that",
                            parsed.items[i].name
                        );
                    }
                    continue;
                }
                if needed.insert(name) {
                    stack.extend(parsed.items.iter().enumerate().filter(|(_, it)| it.name == *name).map(|(j, _)| j));
                }
            }
        }
        let mut ptx = format!("//\n// gpuprim-kernels module {key}\n//\n\n");
        for h in &parsed.header {
            ptx.push_str(h);
            ptx.push('\n');
        }
        let mut functions = 0;
        for (i, it) in parsed.items.iter().enumerate() {
            let keep = if it.kind == Kind::Entry { entries.contains(&i) } else { needed.contains(it.name.as_str()) };
            if !keep {
                continue;
            }
            ptx.push('\n');
            if it.globl {
                ptx.push_str(&format!("\t// .globl\t{}\n", it.name));
            }
            if it.kind == Kind::Var {
                ptx.push_str(&it.text);
            } else {
                ptx.push_str(&renumber(it, functions)?);
                functions += 1;
            }
            ptx.push('\n');
        }
        modules.push(Module {
            key: key.to_string(),
            entries: entries.iter().map(|&i| parsed.items[i].name.clone()).collect(),
            ptx,
        });
    }
    Ok(modules)
}

// ---------------------------------------------------------------------------
// ptxas

struct Job {
    key: String,
    arch: &'static str,
    /// Keep the cubin (shipped) or only check that it assembles (testing).
    keep: bool,
}

type Cubins = BTreeMap<(String, &'static str), Vec<u8>>;

/// Runs the jobs, [`JOBS`] at a time; fails if any ptxas run fails.
fn assemble_all(ptxas: &Path, dir: &Path, jobs: &[Job]) -> Result<Cubins> {
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let cubins = Mutex::new(Cubins::new());
    let errors = Mutex::new(Vec::<String>::new());
    std::thread::scope(|s| {
        for _ in 0..JOBS {
            s.spawn(|| {
                while !stop.load(Ordering::Relaxed) {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(job) = jobs.get(i) else { break };
                    match assemble(ptxas, dir, job) {
                        Ok(Some(bytes)) => {
                            cubins.lock().expect("no panics hold the lock").insert((job.key.clone(), job.arch), bytes);
                        }
                        Ok(None) => {}
                        Err(e) => {
                            errors.lock().expect("no panics hold the lock").push(format!("{e:#}"));
                            stop.store(true, Ordering::Relaxed);
                        }
                    }
                }
            });
        }
    });
    let errors = errors.into_inner().expect("no panics hold the lock");
    if !errors.is_empty() {
        bail!("ptxas failed:\n{}", errors.join("\n"));
    }
    Ok(cubins.into_inner().expect("no panics hold the lock"))
}

/// The PTX comments of `gpu::grid_dependency_wait` and
/// `gpu::launch_dependents`, and the instructions they stand for in the
/// sm_90 machine code.
const GRID_DEPENDENCY_MARKERS: [(&str, &str); 2] = [
    ("// gpuprim: griddepcontrol.wait", "griddepcontrol.wait;"),
    ("// gpuprim: griddepcontrol.launch_dependents", "griddepcontrol.launch_dependents;"),
];

/// The PTX that `arch`'s machine code is assembled from: the module's
/// own, or for `sm_90`, where it holds grid-dependency comments, the same
/// with those made instructions (PTX ISA 7.8, `.target sm_90`, which
/// `griddepcontrol` needs). `None`: the module's own.
fn ptx_for_arch(text: &str, arch: &str) -> Result<Option<String>> {
    if arch != "sm_90" || !GRID_DEPENDENCY_MARKERS.iter().any(|(m, _)| text.contains(m)) {
        return Ok(None);
    }
    let header = format!(".version 7.0\n.target {PTX_ARCH}\n");
    ensure!(text.contains(&header), "a module with grid-dependency comments lacks the header {header:?}");
    let mut out = text.replacen(&header, ".version 7.8\n.target sm_90\n", 1);
    for (marker, insn) in GRID_DEPENDENCY_MARKERS {
        out = out.replace(marker, insn);
    }
    Ok(Some(out))
}

fn assemble(ptxas: &Path, dir: &Path, job: &Job) -> Result<Option<Vec<u8>>> {
    let mut ptx = dir.join(format!("{}.ptx", job.key));
    let text = fs::read_to_string(&ptx).with_context(|| format!("reading {}", ptx.display()))?;
    if let Some(own) = ptx_for_arch(&text, job.arch)? {
        ptx = dir.join(format!("{}.{}.ptx", job.key, job.arch));
        fs::write(&ptx, own).with_context(|| format!("writing {}", ptx.display()))?;
    }
    let cubin = dir.join(format!("{}.{}.cubin", job.key, job.arch));
    let mut cmd = Command::new(ptxas);
    cmd.args(["--gpu-name", job.arch]).arg(&ptx).arg("-o").arg(&cubin);
    let out = util::capture(&mut cmd)?;
    let mut text = String::from_utf8_lossy(&out.stderr).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stdout));
    if !out.status.success() {
        bail!("ptxas --gpu-name {} {}.ptx ({}):\n{}", job.arch, job.key, out.status, text.trim_end());
    }
    if !text.trim().is_empty() {
        println!("artifact: ptxas {} {}: {}", job.arch, job.key, text.trim_end());
    }
    if !job.keep {
        let _ = fs::remove_file(&cubin);
        return Ok(None);
    }
    let bytes = fs::read(&cubin).with_context(|| format!("reading {}", cubin.display()))?;
    ensure!(!bytes.is_empty(), "ptxas wrote an empty {}", cubin.display());
    Ok(Some(bytes))
}

fn ptxas_version(ptxas: &Path) -> Result<String> {
    let out = util::capture(Command::new(ptxas).arg("--version"))?;
    ensure!(out.status.success(), "`{} --version` failed", ptxas.display());
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .find(|l| l.contains("release"))
        .map(|l| l.trim().to_string())
        .with_context(|| format!("no version line in `ptxas --version`: {text}"))
}

fn toolchain_line(repo: &Repo) -> Result<String> {
    let mut cmd = Command::new("rustup");
    repo.clean(&mut cmd);
    cmd.args(["run", &repo.channel, "rustc", "--version"]);
    let out = util::capture(&mut cmd)?;
    ensure!(out.status.success(), "`rustup run {} rustc --version` failed", repo.channel);
    Ok(format!("{} ({})", repo.channel, String::from_utf8_lossy(&out.stdout).trim()))
}

// ---------------------------------------------------------------------------
// Container and compression

/// Modules by key; a `BTreeMap` iterates in the byte order of the keys.
pub type Container = BTreeMap<String, Vec<u8>>;

/// The container format:
///
/// ```text
/// magic   8 bytes  b"GPKMOD01"
/// count   u32 LE
/// count times, sorted by key (byte order):
///   key_len u32 LE, key (UTF-8)
///   data_len u32 LE, data
/// ```
pub fn encode(c: &Container) -> Result<Vec<u8>> {
    let len = |n: usize| u32::try_from(n).context("a container field exceeds 4 GiB");
    let mut out = Vec::with_capacity(12 + c.iter().map(|(k, v)| 8 + k.len() + v.len()).sum::<usize>());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&len(c.len())?.to_le_bytes());
    for (key, data) in c {
        out.extend_from_slice(&len(key.len())?.to_le_bytes());
        out.extend_from_slice(key.as_bytes());
        out.extend_from_slice(&len(data.len())?.to_le_bytes());
        out.extend_from_slice(data);
    }
    Ok(out)
}

/// Reads a container, checking the magic, the key order and that nothing
/// trails it.
pub fn decode(bytes: &[u8]) -> Result<Container> {
    fn take<'a>(rest: &mut &'a [u8], n: usize) -> Result<&'a [u8]> {
        ensure!(n <= rest.len(), "container truncated");
        let (head, tail) = rest.split_at(n);
        *rest = tail;
        Ok(head)
    }
    fn take_u32(rest: &mut &[u8]) -> Result<usize> {
        let b = take(rest, 4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
    }
    let mut rest = bytes;
    ensure!(take(&mut rest, 8)? == MAGIC, "not a GPKMOD01 container (bad magic)");
    let count = take_u32(&mut rest)?;
    let mut c = Container::new();
    let mut last: Option<String> = None;
    for _ in 0..count {
        let n = take_u32(&mut rest)?;
        let key = String::from_utf8(take(&mut rest, n)?.to_vec()).context("container key is not UTF-8")?;
        let n = take_u32(&mut rest)?;
        let data = take(&mut rest, n)?.to_vec();
        ensure!(last.as_ref().is_none_or(|l| *l < key), "container keys not sorted or repeated at {key}");
        last = Some(key.clone());
        c.insert(key, data);
    }
    ensure!(rest.is_empty(), "{} bytes after the container's last module", rest.len());
    Ok(c)
}

fn compress(raw: &[u8]) -> Result<Vec<u8>> {
    let mut z = zstd::bulk::Compressor::new(ZSTD_LEVEL)?;
    z.include_checksum(true)?;
    Ok(z.compress(raw)?)
}

/// Compresses every buffer, [`JOBS`] at a time (each single-threaded).
fn compress_all(raws: &[Vec<u8>]) -> Result<Vec<Vec<u8>>> {
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<Result<Vec<u8>>>>> = Mutex::new(raws.iter().map(|_| None).collect());
    std::thread::scope(|s| {
        for _ in 0..JOBS {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(raw) = raws.get(i) else { break };
                    let r = compress(raw);
                    results.lock().expect("no panics hold the lock")[i] = Some(r);
                }
            });
        }
    });
    results
        .into_inner()
        .expect("no panics hold the lock")
        .into_iter()
        .map(|r| r.context("a compression job did not run")?)
        .collect()
}

/// Decompresses a committed file: exactly one zstd frame.
fn decompress(z: &[u8]) -> Result<Vec<u8>> {
    let frame = zstd::zstd_safe::find_frame_compressed_size(z).map_err(|e| anyhow::anyhow!("not zstd: code {e}"))?;
    ensure!(frame == z.len(), "not exactly one zstd frame ({} of {} bytes in the first)", frame, z.len());
    Ok(zstd::stream::decode_all(z)?)
}

fn write_file(path: &Path, bytes: &[u8]) -> Result<()> {
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    fs::write(path, bytes).with_context(|| format!("writing {}", path.display()))
}

// ---------------------------------------------------------------------------
// Manifest and check

struct ManifestInfo<'a> {
    toolchain: String,
    ptxas: String,
    modules: &'a [Module],
}

/// `MANIFEST.txt`: deterministic (no times, no absolute paths).
/// `sizes[i]`: the uncompressed and compressed sizes of `files[i]`.
fn manifest(info: &ManifestInfo, files: &[(String, Container)], sizes: &[(usize, usize)]) -> String {
    let mut m = String::new();
    let shipped: Vec<&Module> = info.modules.iter().filter(|m| !m.key.starts_with(TESTING_PREFIX)).collect();
    let testing: Vec<&Module> = info.modules.iter().filter(|m| m.key.starts_with(TESTING_PREFIX)).collect();
    let count = |ms: &[&Module]| ms.iter().map(|m| m.entries.len()).sum::<usize>();
    m.push_str("# gpuprim kernels, generated by `cargo xtask artifact` (checked by `cargo xtask artifact --check`).\n");
    m.push_str("# Do not edit: rebuild with `cargo xtask artifact` and commit host/kernels/ and tests/kernels/.\n");
    m.push_str(&format!("toolchain: {}\n", info.toolchain));
    m.push_str(&format!("ptx: nvptx64-nvidia-cuda, -C target-cpu={PTX_ARCH}\n"));
    m.push_str(&format!("ptxas: {} (--gpu-name {})\n", info.ptxas, CUBIN_ARCHS.join(", ")));
    m.push_str(&format!("container: {} (zstd level {ZSTD_LEVEL})\n", String::from_utf8_lossy(MAGIC)));
    m.push_str(&format!("shipped: {} modules, {} entries\n", shipped.len(), count(&shipped)));
    m.push_str(&format!("testing: {} modules, {} entries (PTX only, {TESTING_ZST})\n", testing.len(), count(&testing)));
    m.push_str("\nfiles (bytes uncompressed, bytes compressed):\n");
    for ((rel, _), (raw, z)) in files.iter().zip(sizes) {
        m.push_str(&format!("  {rel:<32} {raw:>10} {z:>10}\n"));
    }
    m.push_str("\nmodules (key, entries):\n");
    for module in &shipped {
        m.push_str(&format!("  {} {}\n", module.key, module.entries.len()));
    }
    m.push_str("\ntesting modules (key, entries):\n");
    for module in &testing {
        m.push_str(&format!("  {} {}\n", module.key, module.entries.len()));
    }
    m
}

/// Compares what was built with the committed files: the decompressed
/// containers, module by module, and the manifest (whose compressed sizes
/// must be those of the committed files).
fn check(repo: &Repo, info: &ManifestInfo, files: &[(String, Container)], encoded: &[Vec<u8>]) -> Result<()> {
    let mut problems: Vec<String> = Vec::new();
    // The manifest must give the committed files' real compressed sizes.
    let mut sizes: Vec<(usize, usize)> = Vec::new();
    for ((rel, built), raw) in files.iter().zip(encoded) {
        let path = repo.root.join(rel);
        let z = match fs::read(&path) {
            Ok(z) => z,
            Err(e) => {
                problems.push(format!("{rel}: cannot read it ({e})"));
                sizes.push((raw.len(), 0));
                continue;
            }
        };
        sizes.push((raw.len(), z.len()));
        let committed = match decompress(&z).and_then(|raw| decode(&raw)) {
            Ok(c) => c,
            Err(e) => {
                problems.push(format!("{rel}: unreadable: {e:#}"));
                continue;
            }
        };
        let differ: Vec<&str> =
            built.iter().filter(|(k, v)| committed.get(*k).is_some_and(|c| c != *v)).map(|(k, _)| k.as_str()).collect();
        let missing: Vec<&str> = built.keys().filter(|k| !committed.contains_key(*k)).map(String::as_str).collect();
        let extra: Vec<&str> = committed.keys().filter(|k| !built.contains_key(*k)).map(String::as_str).collect();
        for (what, list) in [("differ", differ), ("are missing", missing), ("are extra (no longer built)", extra)] {
            if !list.is_empty() {
                problems.push(format!("{rel}: {} module(s) {what}: {}", list.len(), list.join(", ")));
            }
        }
    }
    let expected = manifest(info, files, &sizes);
    write_file(&repo.root.join(CHECK_MANIFEST), expected.as_bytes())?;
    match fs::read_to_string(repo.root.join(MANIFEST)) {
        Ok(text) if text == expected => {}
        Ok(text) => {
            let old: BTreeSet<&str> = text.lines().collect();
            let new: BTreeSet<&str> = expected.lines().collect();
            let mut diff = String::new();
            for l in text.lines().filter(|l| !new.contains(l)).take(20) {
                diff.push_str(&format!("\n    - {l}"));
            }
            for l in expected.lines().filter(|l| !old.contains(l)).take(20) {
                diff.push_str(&format!("\n    + {l}"));
            }
            problems.push(format!(
                "{MANIFEST} differs (- committed, + expected from this build and the committed files):{diff}"
            ));
        }
        Err(e) => problems.push(format!("{MANIFEST}: cannot read it ({e})")),
    }
    if !problems.is_empty() {
        for p in &problems {
            eprintln!("artifact: {p}");
        }
        bail!(
            "the committed kernel artifacts are not what the kernels build to ({} problem(s); the modules built are \
             in {MODULES_DIR}, the manifest expected is {CHECK_MANIFEST}): run `cargo xtask artifact` and commit \
             host/kernels/ and tests/kernels/",
            problems.len()
        );
    }
    println!(
        "artifact: ok: the committed files match the build ({} files, {} modules)",
        files.len(),
        files.iter().map(|(_, c)| c.len()).sum::<usize>()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const PTX: &str = "//
// Generated by LLVM NVPTX Back-End
//

.version 7.0
.target sm_70
.address_size 64

\t// .globl\tsum_f32_b128
.extern .shared .align 16 .b8 gpu_launch_sized_workgroup_mem[];
.global .align 4 .b8 anon_$_ab12_$_0[16] = {1, 0, 0, 0, 3};
.global .align 8 .u64 table[2] = {generic(anon_$_ab12_$_0), 0};

.visible .entry sum_f32_b128(
\t.param .u64 .ptr .align 1 sum_f32_b128_param_0
)
{
\t{ // callseq 0
\tst.shared.b32 \t[gpu_launch_sized_workgroup_mem], %r1;
\t}
\t@%p1 bra \t$L__BB7_1;
$L__BB7_1:
\tret;
}
\t// .globl\tsum_f32_b256
.visible .entry sum_f32_b256(
\t.param .u64 sum_f32_b256_param_0
)
.maxntid 256, 1, 1
{
\tret;
}
\t// .globl\tlookup_i32
.visible .entry lookup_i32(
\t.param .u64 lookup_i32_param_0
)
{
\t.local .align 4 .b8 \t__local_depot9[128];
\tmov.b64 \t%SPL, __local_depot9;
\tmov.b64 \t%rd12, table; // not gpu_launch_sized_workgroup_mem
$L__BB9_12:
\tret;
}
";

    #[test]
    fn the_kernels_leave_the_register_cap_marker_the_builder_reads() {
        // asm! takes only a literal, so kernels/ repeats the builder's text.
        let nvptx = include_str!("../../kernels/src/gpu/nvptx.rs");
        let asm = format!("asm!(\"{}{{n}}\"", gpuprim_builder::REGISTER_CAP_MARKER);
        assert!(nvptx.contains(&asm), "kernels/src/gpu/nvptx.rs no longer writes {asm}");
        let asm = format!("asm!(\"{}{{b}} {{n}}\"", gpuprim_builder::LAUNCH_BOUNDS_MARKER);
        assert!(nvptx.contains(&asm), "kernels/src/gpu/nvptx.rs no longer writes {asm}");
    }

    /// The grid-dependency comments become instructions for `sm_90` only,
    /// under the header they need; kernels/src/gpu/nvptx.rs still writes
    /// them.
    #[test]
    fn grid_dependency_comments_become_instructions_for_sm_90() {
        let nvptx = include_str!("../../kernels/src/gpu/nvptx.rs");
        for (marker, _) in GRID_DEPENDENCY_MARKERS {
            assert!(nvptx.contains(&format!("asm!(\"{marker}\"")), "nvptx.rs no longer writes {marker}");
        }
        let ptx = ".version 7.0\n.target sm_70\n.address_size 64\n\n.visible .entry k()\n{\n\t// begin inline asm\n\t// gpuprim: griddepcontrol.wait\n\t// end inline asm\n\tret;\n}\n";
        assert_eq!(ptx_for_arch(ptx, "sm_80").unwrap(), None);
        assert_eq!(ptx_for_arch(".version 7.0\n.target sm_70\n", "sm_90").unwrap(), None);
        let out = ptx_for_arch(ptx, "sm_90").unwrap().expect("rewritten");
        assert!(out.starts_with(".version 7.8\n.target sm_90\n.address_size 64\n"));
        assert!(out.contains("\tgriddepcontrol.wait;\n") && !out.contains("// gpuprim: griddepcontrol"));
        assert!(ptx_for_arch(&ptx.replace(".version 7.0", ".version 8.0"), "sm_90").is_err());
    }

    #[test]
    fn group_keys_drop_the_block_size_only() {
        assert_eq!(group_key("reduce_vectorized_sum_f32_b256"), "reduce_vectorized_sum_f32");
        assert_eq!(group_key("lookup_i32"), "lookup_i32");
        assert_eq!(group_key("x_b"), "x_b");
        assert_eq!(group_key("x_b12y"), "x_b12y");
        assert_eq!(group_key("x_b1_b2"), "x_b1");
    }

    #[test]
    fn splits_by_key_with_the_declarations_each_module_uses() {
        let parsed = parse(PTX).expect("parses");
        assert_eq!(parsed.header, [".version 7.0", ".target sm_70", ".address_size 64"]);
        assert_eq!(parsed.entries().count(), 3);
        let modules = split(&parsed).expect("splits");
        let keys: Vec<&str> = modules.iter().map(|m| m.key.as_str()).collect();
        assert_eq!(keys, ["lookup_i32", "sum_f32"]);
        let (lookup, sum) = (&modules[0], &modules[1]);
        assert_eq!(sum.entries, ["sum_f32_b128", "sum_f32_b256"]);
        assert!(sum.ptx.contains(".extern .shared .align 16 .b8 gpu_launch_sized_workgroup_mem[];"));
        assert!(!sum.ptx.contains("table"));
        assert!(sum.ptx.contains(".maxntid 256, 1, 1\n{"));
        assert!(sum.ptx.contains("\t// .globl\tsum_f32_b256\n.visible .entry sum_f32_b256("));
        // table, and through it the anonymous global; the name in a comment
        // does not count.
        assert!(lookup.ptx.contains(".global .align 8 .u64 table[2]"));
        assert!(lookup.ptx.contains(".global .align 4 .b8 anon_$_0[16]"));
        assert!(lookup.ptx.contains("{generic(anon_$_0), 0}"));
        assert!(!lookup.ptx.contains(".extern .shared"));
        assert!(lookup.ptx.find("anon_$_0[16]") < lookup.ptx.find("table[2]"));
        // Labels and stacks numbered by the function's place in the module.
        assert!(lookup.ptx.contains("__local_depot0[128];\n\tmov.b64 \t%SPL, __local_depot0;"));
        assert!(lookup.ptx.contains("\n$L__BB0_12:\n"));
        assert!(sum.ptx.contains("bra \t$L__BB0_1;\n$L__BB0_1:\n"));
        assert!(lookup.ptx.starts_with("//\n// gpuprim-kernels module lookup_i32\n//\n\n.version 7.0\n"));
    }

    #[test]
    fn refuses_what_it_does_not_know() {
        let with = |extra: &str| format!("{PTX}{extra}\n");
        assert!(parse(&with(".section .debug_info { }")).is_err());
        assert!(parse(&with(".visible .entry open(\n)\n{\n\tret;")).is_err());
        assert!(parse(&with(".visible .entry proto(.param .u64 p);")).is_err());
        assert!(parse(&with(".global .u32 table;")).is_err(), "a second `table`");
        assert!(parse(&with("\t// .globl\tnobody")).is_err());
        assert!(parse(&with(".version 7.8")).is_err());
        assert!(parse(&with(".global .u32 anon_$_0;")).is_err(), "not LLVM's form");
        let label = |l: &str| split(&parse(&with(&format!(".entry e(\n)\n{{\n{l}:\n\tret;\n}}"))).expect("parses"));
        assert!(label("$L__BB3_1").is_ok());
        assert!(label("$L__tmp0").is_err());
        assert!(label("$L__BB3").is_err());
        let f = with(
            ".func (.param .b32 r) helper(\n\t.param .b32 a\n);\n.func (.param .b32 r) helper(\n\t.param .b32 a\n)\n{\n\tret;\n}",
        );
        let parsed = parse(&f).expect("a prototype and a definition");
        assert_eq!(parsed.items.iter().filter(|i| i.name == "helper").count(), 2);
    }

    #[test]
    fn an_entry_may_not_refer_to_another_module() {
        let f = format!("{PTX}.visible .entry other(\n)\n{{\n\tmov.u64 %rd1, lookup_i32;\n}}\n");
        assert!(split(&parse(&f).expect("parses")).is_err());
    }

    #[test]
    fn containers_round_trip_sorted() {
        let mut c = Container::new();
        c.insert("b".into(), vec![1, 2, 3]);
        c.insert("a".into(), Vec::new());
        let bytes = encode(&c).expect("encodes");
        assert_eq!(&bytes[..12], b"GPKMOD01\x02\0\0\0");
        assert_eq!(&bytes[12..17], b"\x01\0\0\0a");
        assert_eq!(decode(&bytes).expect("decodes"), c);
        assert!(decode(&bytes[..bytes.len() - 1]).is_err());
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(decode(&longer).is_err());
        let z = compress(&bytes).expect("compresses");
        assert_eq!(decompress(&z).expect("decompresses"), bytes);
        assert_eq!(compress(&bytes).expect("compresses"), z, "deterministic");
    }
}
