//! `cargo xtask ptx`: build the kernels' PTX, assemble it with ptxas, and
//! report registers, stack, spills and shared memory per entry; check that
//! shuffle-named entries really use `shfl.sync`.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::setup::Setup;
use crate::util::{self, Repo};

/// Where host/build.rs writes the PTX (besides embedding it).
pub const PTX_FILE: &str = "target/ptx/gpuprim-kernels.ptx";

#[derive(clap::Args, Debug, Clone)]
pub struct PtxArgs {
    /// GPU architecture to assemble for (ptxas --gpu-name).
    #[arg(long, default_value = "sm_90")]
    pub arch: String,
    /// Print only problems and a one-line summary.
    #[arg(long)]
    pub quiet: bool,
}

/// Resources of one function, as reported by `ptxas -v`.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Resources {
    pub entry: bool,
    pub registers: Option<u32>,
    pub barriers: Option<u32>,
    pub stack: u32,
    pub spill_stores: u32,
    pub spill_loads: u32,
    pub smem: u32,
}

pub fn run(repo: &Repo, setup: &Setup, args: &PtxArgs) -> Result<()> {
    let mut build = repo.cargo();
    build.args(["build", "--release", "-p", "gpuprim"]);
    if args.arch != "sm_90" {
        // host/build.rs compiles for sm_90 unless told otherwise; ptxas
        // rejects PTX whose .target is newer than --gpu-name.
        build.env("GPUPRIM_PTX_ARCH", &args.arch);
    }
    util::run(&mut build).context("building gpuprim (its build.rs compiles the kernels to PTX)")?;
    let ptx_path = repo.root.join(PTX_FILE);
    let ptx = fs::read_to_string(&ptx_path).with_context(|| {
        format!(
            "reading {} (host/build.rs is expected to write the PTX there)",
            ptx_path.display()
        )
    })?;
    // target/ptx/gpuprim-kernels.cubin for the default arch, else
    // gpuprim-kernels.<arch>.cubin beside it.
    let cubin = if args.arch == "sm_90" {
        ptx_path.with_extension("cubin")
    } else {
        ptx_path.with_file_name(format!("gpuprim-kernels.{}.cubin", args.arch))
    };

    let mut cmd = Command::new(&setup.ptxas);
    cmd.args(["--gpu-name", &args.arch, "-v"])
        .arg(&ptx_path)
        .arg("-o")
        .arg(&cubin);
    println!("$ {}", util::display(&cmd));
    let out = util::capture(&mut cmd)?;
    let mut report = String::from_utf8_lossy(&out.stderr).into_owned();
    report.push_str(&String::from_utf8_lossy(&out.stdout));

    let mut problems = Vec::new();
    for line in report.lines() {
        let l = line.trim_start();
        if l.starts_with("ptxas error") || l.starts_with("ptxas fatal") {
            problems.push(l.to_string());
        } else if l.starts_with("ptxas warning") {
            println!("{l}");
        }
    }
    if !out.status.success() {
        problems.push(format!("ptxas exited with {}", out.status));
    }

    let funcs = parse_report(&report);
    let entries: Vec<(&String, &Resources)> = funcs.iter().filter(|(_, r)| r.entry).collect();
    if !args.quiet && !entries.is_empty() {
        print_table(&entries);
    }
    for (name, r) in &funcs {
        if r.spill_stores > 0 || r.spill_loads > 0 {
            problems.push(format!(
                "{} {name} spills: {} bytes stores, {} bytes loads",
                if r.entry { "entry" } else { "function" },
                r.spill_stores,
                r.spill_loads
            ));
        }
    }
    if out.status.success() && entries.is_empty() {
        problems.push(format!(
            "ptxas reported no entry functions for {}",
            ptx_path.display()
        ));
    }

    // Shuffle check on the PTX text.
    let module = parse_ptx(&ptx);
    let ptx_entries: BTreeSet<&str> = module.entries.keys().map(String::as_str).collect();
    for name in &ptx_entries {
        let lower = name.to_ascii_lowercase();
        if !(lower.contains("shfl") || lower.contains("shuffle")) {
            continue;
        }
        let found = module.reaches(name, "shfl.sync");
        let verdict = match &found {
            Some(f) if f == name => "uses shfl.sync".to_string(),
            Some(f) => format!("uses shfl.sync (in called .func {f})"),
            None => "NO shfl.sync".to_string(),
        };
        if !args.quiet || found.is_none() {
            println!("shuffle check: {name}: {verdict}");
        }
        if found.is_none() && lower.contains("_shuffle_") {
            problems.push(format!(
                "entry {name} is named as a shuffle kernel but has no shfl.sync"
            ));
        }
    }

    println!(
        "ptx: {} entries assembled for {} from {} -> {}",
        entries.len(),
        args.arch,
        repo.rel(&ptx_path),
        repo.rel(&cubin)
    );
    if !problems.is_empty() {
        for p in &problems {
            eprintln!("ptx: problem: {p}");
        }
        if !report.trim().is_empty() && (!out.status.success() || args.quiet) {
            eprintln!("--- ptxas output ---\n{}", report.trim_end());
        }
        bail!("ptx check failed: {} problem(s)", problems.len());
    }
    println!("ptx: ok (no ptxas errors, no spills)");
    Ok(())
}

fn print_table(entries: &[(&String, &Resources)]) {
    let w = entries
        .iter()
        .map(|(n, _)| n.len())
        .max()
        .unwrap_or(5)
        .max(5);
    println!(
        "{:<w$}  {:>4}  {:>4}  {:>6}  {:>8}  {:>8}  {:>6}",
        "entry", "regs", "bars", "stack", "spill st", "spill ld", "smem"
    );
    let opt = |v: Option<u32>| v.map_or_else(|| "?".to_string(), |v| v.to_string());
    for (name, r) in entries {
        println!(
            "{:<w$}  {:>4}  {:>4}  {:>6}  {:>8}  {:>8}  {:>6}",
            name,
            opt(r.registers),
            opt(r.barriers),
            r.stack,
            r.spill_stores,
            r.spill_loads,
            r.smem
        );
    }
}

/// Parses `ptxas -v` output into per-function resources.
pub fn parse_report(report: &str) -> BTreeMap<String, Resources> {
    let mut funcs: BTreeMap<String, Resources> = BTreeMap::new();
    let mut current: Option<String> = None;
    for line in report.lines() {
        let l = line.trim();
        if let Some(rest) = l.split("Compiling entry function '").nth(1) {
            let name = rest.split('\'').next().unwrap_or("").to_string();
            funcs.entry(name.clone()).or_default().entry = true;
            current = Some(name);
        } else if let Some(rest) = l.split("Function properties for ").nth(1) {
            let name = rest.trim().to_string();
            funcs.entry(name.clone()).or_default();
            current = Some(name);
        } else if let Some(rest) = l.split("Used ").nth(1)
            && rest.contains("registers")
            && let Some(r) = current.as_ref().and_then(|n| funcs.get_mut(n))
        {
            r.registers = number_before(l, "registers");
            r.barriers = number_before(l, "barriers");
            r.smem = number_before(l, "bytes smem").unwrap_or(0);
        } else if l.contains("bytes stack frame")
            && let Some(r) = current.as_ref().and_then(|n| funcs.get_mut(n))
        {
            r.stack = number_before(l, "bytes stack frame").unwrap_or(0);
            r.spill_stores = number_before(l, "bytes spill stores").unwrap_or(0);
            r.spill_loads = number_before(l, "bytes spill loads").unwrap_or(0);
        }
    }
    funcs
}

/// The integer right before `what` in `line` ("Used 12 registers" -> 12).
fn number_before(line: &str, what: &str) -> Option<u32> {
    let i = line.find(what)?;
    line[..i].split_whitespace().last()?.parse().ok()
}

/// Entry and function bodies of a PTX module, and the calls between them.
#[derive(Debug, Default)]
pub struct PtxModule {
    pub entries: BTreeMap<String, String>,
    pub funcs: BTreeMap<String, String>,
}

impl PtxModule {
    /// Name of the first function reachable from `entry` (itself first)
    /// whose body contains `needle`.
    pub fn reaches(&self, entry: &str, needle: &str) -> Option<String> {
        let mut seen = BTreeSet::new();
        let mut stack = vec![entry.to_string()];
        while let Some(name) = stack.pop() {
            if !seen.insert(name.clone()) {
                continue;
            }
            let Some(body) = self.entries.get(&name).or_else(|| self.funcs.get(&name)) else {
                continue;
            };
            if body.contains(needle) {
                return Some(name);
            }
            stack.extend(called_functions(body));
        }
        None
    }
}

/// Splits PTX into `.entry NAME(` / `.func ... NAME(` blocks, with their
/// bodies found by brace matching (comments stripped).
pub fn parse_ptx(ptx: &str) -> PtxModule {
    let text: String = ptx
        .lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n");
    let mut module = PtxModule::default();
    let mut pos = 0;
    while let Some((kind_at, is_entry)) = next_decl(&text, pos) {
        let after = kind_at
            + if is_entry {
                ".entry".len()
            } else {
                ".func".len()
            };
        let mut rest = text[after..].trim_start();
        // `.func (.param .b32 retval) name(`: skip the return parameters.
        if !is_entry && rest.starts_with('(') {
            let Some(close) = rest.find(')') else { break };
            rest = rest[close + 1..].trim_start();
        }
        let name_len = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || "_$.".contains(c)))
            .unwrap_or(rest.len());
        let name = rest[..name_len].to_string();
        let name_start = text.len() - rest.len();
        // Parameter list, then either `;` (a declaration) or the body.
        let Some(body_open) = text[name_start..].find(['{', ';']).map(|i| name_start + i) else {
            break;
        };
        if text.as_bytes()[body_open] == b';' {
            pos = body_open + 1;
            continue;
        }
        let mut depth = 0usize;
        let mut end = text.len();
        for (i, c) in text[body_open..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = body_open + i + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        let body = text[body_open..end].to_string();
        if is_entry {
            module.entries.insert(name, body);
        } else {
            module.funcs.insert(name, body);
        }
        pos = end;
    }
    module
}

/// Next `.entry` or `.func` directive (as a whole word) at or after `from`.
fn next_decl(text: &str, from: usize) -> Option<(usize, bool)> {
    let mut at = from;
    loop {
        let e = text[at..].find(".entry").map(|i| (at + i, true));
        let f = text[at..].find(".func").map(|i| (at + i, false));
        let (i, is_entry) = match (e, f) {
            (Some(a), Some(b)) => {
                if a.0 < b.0 {
                    a
                } else {
                    b
                }
            }
            (a, b) => a.or(b)?,
        };
        let len = if is_entry { 6 } else { 5 };
        let before_ok = i == 0 || text.as_bytes()[i - 1].is_ascii_whitespace();
        let after_ok = text
            .as_bytes()
            .get(i + len)
            .is_some_and(|b| b.is_ascii_whitespace());
        if before_ok && after_ok {
            return Some((i, is_entry));
        }
        at = i + len;
    }
}

/// Callee names of `call` instructions in a body:
/// `call.uni (retval0), name, (args);` or `call.uni name, (args);`.
fn called_functions(body: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in body.lines() {
        let l = line.trim_start();
        if !l.starts_with("call") {
            continue;
        }
        let Some((_, mut rest)) = l.split_once(char::is_whitespace) else {
            continue;
        };
        rest = rest.trim_start();
        if rest.starts_with('(') {
            let Some(close) = rest.find(')') else {
                continue;
            };
            rest = rest[close + 1..]
                .trim_start()
                .trim_start_matches(',')
                .trim_start();
        }
        let name: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || "_$.".contains(*c))
            .collect();
        if !name.is_empty() {
            out.push(name);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const REPORT: &str = "ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'reduce_warp_shuffle_sum_i32' for 'sm_90'
ptxas info    : Function properties for reduce_warp_shuffle_sum_i32
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 12 registers, used 0 barriers
ptxas info    : Compile time = 1.966 ms
ptxas info    : Function properties for helper
    8 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads
ptxas info    : Compiling entry function 'scan_static' for 'sm_90'
ptxas info    : Function properties for scan_static
    16 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 40 registers, used 1 barriers, 16 bytes stack frame, 1024 bytes smem, 384 bytes cmem[0]
";

    #[test]
    fn parses_ptxas_verbose_report() {
        let f = parse_report(REPORT);
        let shfl = &f["reduce_warp_shuffle_sum_i32"];
        assert!(shfl.entry);
        assert_eq!(shfl.registers, Some(12));
        assert_eq!(shfl.barriers, Some(0));
        assert_eq!((shfl.stack, shfl.spill_stores, shfl.smem), (0, 0, 0));
        let helper = &f["helper"];
        assert!(!helper.entry);
        assert_eq!(
            (helper.stack, helper.spill_stores, helper.spill_loads),
            (8, 4, 4)
        );
        let scan = &f["scan_static"];
        assert_eq!(scan.registers, Some(40));
        assert_eq!(scan.smem, 1024);
        assert_eq!(scan.stack, 16);
    }

    const PTX: &str = r#"
.version 7.8
.target sm_90
.extern .shared .align 4 .b8 gpu_launch_sized_workgroup_mem[];
.extern .func (.param .b32 func_retval0) vprintf(.param .b64 a, .param .b64 b);
.visible .func  (.param .b32 func_retval0) warp_sum(
	.param .b32 warp_sum_param_0
)
{
	shfl.sync.down.b32 	%r4, %r3, 16, 31, -1; // { not a brace
	ret;
}
	// .globl	reduce_warp_shuffle_sum_i32 .entry in a comment
.visible .entry reduce_warp_shuffle_sum_i32(
	.param .u64 .ptr .align 1 p0
)
{
	{ // callseq 0
	.param .b32 param0;
	call.uni (retval0), warp_sum, (param0);
	}
	ret;
}
.visible .entry reduce_shuffle_broken(
	.param .u64 p0
)
{
	ld.global.b32 	%r1, [%rd2];
	ret;
}
.visible .entry reduce_inline_shfl(
	.param .u64 p0
)
{
	shfl.sync.bfly.b32 	%r4, %r3, 16, 31, -1;
}
"#;

    #[test]
    fn finds_entries_funcs_and_shuffles_through_calls() {
        let m = parse_ptx(PTX);
        assert_eq!(
            m.entries.keys().collect::<Vec<_>>(),
            [
                "reduce_inline_shfl",
                "reduce_shuffle_broken",
                "reduce_warp_shuffle_sum_i32"
            ]
        );
        assert!(m.funcs.contains_key("warp_sum"));
        assert!(!m.funcs.contains_key("vprintf"));
        assert_eq!(
            m.reaches("reduce_warp_shuffle_sum_i32", "shfl.sync")
                .as_deref(),
            Some("warp_sum")
        );
        assert_eq!(
            m.reaches("reduce_inline_shfl", "shfl.sync").as_deref(),
            Some("reduce_inline_shfl")
        );
        assert_eq!(m.reaches("reduce_shuffle_broken", "shfl.sync"), None);
    }
}
