//! `cargo xtask ptx`: build the kernels' PTX (the sm_70 PTX that `cargo xtask
//! artifact` builds, testing kernels included), assemble it with ptxas, and
//! report registers, stack, spills and shared memory per entry; check that
//! every entry's registers fit a block of the size its name ends in
//! (`_b1024`: at most 64 a thread), and that shuffle-named entries really
//! use `shfl.sync`.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::artifact;
use crate::setup::Setup;
use crate::util::{self, Repo};

#[derive(clap::Args, Debug, Clone)]
pub struct PtxArgs {
    /// GPU architecture to assemble for (ptxas --gpu-name; sm_70 or newer:
    /// the PTX targets sm_70).
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
    /// Report lines seen for this function (a stack line and, for entries,
    /// a "Used" line each); more than one of a kind means the report could
    /// not be attributed reliably.
    pub lines_seen: (u32, u32),
}

pub fn run(repo: &Repo, setup: &Setup, args: &PtxArgs) -> Result<()> {
    let ptx_path = artifact::build_ptx(repo)?;
    let ptx = fs::read_to_string(&ptx_path).with_context(|| format!("reading {}", ptx_path.display()))?;
    // target/artifact/gpuprim-kernels.<arch>.cubin
    let cubin = ptx_path.with_file_name(format!("gpuprim-kernels.{}.cubin", args.arch));

    let mut cmd = Command::new(&setup.ptxas);
    // --split-compile 0: one thread per CPU. ptxas still reports each
    // function as one block; `parse_report`'s counts check that.
    cmd.args(["--gpu-name", &args.arch, "-v", "--split-compile", "0"]).arg(&ptx_path).arg("-o").arg(&cubin);
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
    for (name, r) in &entries {
        if let Some(p) = launch_problem(name, r.registers) {
            problems.push(p);
        }
        if r.lines_seen != (1, 1) {
            problems.push(format!(
                "ptxas report for entry {name} is incomplete or ambiguous (stack/Used lines seen: {}/{})",
                r.lines_seen.0, r.lines_seen.1
            ));
        }
    }
    if out.status.success() && entries.is_empty() {
        problems.push(format!("ptxas reported no entry functions for {}", ptx_path.display()));
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
            problems.push(format!("entry {name} is named as a shuffle kernel but has no shfl.sync"));
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
    println!("ptx: ok (no ptxas errors, no spills, every block's registers fit)");
    Ok(())
}

pub fn print_table(entries: &[(&String, &Resources)]) {
    let w = entries.iter().map(|(n, _)| n.len()).max().unwrap_or(5).max(5);
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

/// Registers one block may hold: a launch asking for more fails
/// (`CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES`), whatever the grid.
const REGISTERS_PER_BLOCK: u32 = 65536;

/// The block size an entry is launched with: the `_b<N>` its name ends in
/// (every entry of the kernels crate has one).
fn block_size(entry: &str) -> Option<u32> {
    artifact::split_block(entry)?.1.parse().ok()
}

/// Why the entry could not be launched at its block size, if it could not:
/// registers are given out per warp in multiples of 8 per thread, and a
/// block has 64 Ki of them (so a 1024-thread block allows 64 per thread).
/// ptxas itself accepts such an entry; the launch is what fails.
fn launch_problem(entry: &str, registers: Option<u32>) -> Option<String> {
    let (b, regs) = (block_size(entry)?, registers?);
    let need = u64::from(regs.div_ceil(8) * 8) * u64::from(b);
    (need > u64::from(REGISTERS_PER_BLOCK)).then(|| {
        format!(
            "entry {entry} uses {regs} registers a thread: {b} threads need {need} registers, more than a block's {REGISTERS_PER_BLOCK} (the launch would fail)"
        )
    })
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
            r.lines_seen.1 += 1;
            r.registers = number_before(l, "registers");
            r.barriers = number_before(l, "barriers");
            r.smem = number_before(l, "bytes smem").unwrap_or(0);
        } else if l.contains("bytes stack frame")
            && let Some(r) = current.as_ref().and_then(|n| funcs.get_mut(n))
        {
            r.lines_seen.0 += 1;
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
/// bodies found by brace matching (comments stripped). One pass over the
/// lines: the kernels' PTX runs to megabytes and thousands of entries.
pub fn parse_ptx(ptx: &str) -> PtxModule {
    let mut module = PtxModule::default();
    // The declaration being read: (is_entry, header text so far).
    let mut header: Option<(bool, String)> = None;
    // The body being read: (is_entry, name, body text, brace depth).
    let mut body: Option<(bool, String, String, usize)> = None;
    for raw in ptx.lines() {
        let line = raw.split("//").next().unwrap_or("");
        if let Some((is_entry, name, mut text, mut depth)) = body.take() {
            text.push_str(line);
            text.push('\n');
            depth = brace_depth(depth, line);
            if depth == 0 {
                let map = if is_entry { &mut module.entries } else { &mut module.funcs };
                map.insert(name, text);
            } else {
                body = Some((is_entry, name, text, depth));
            }
            continue;
        }
        let mut rest = line;
        if header.is_none() {
            let words: Vec<&str> = line.split_whitespace().collect();
            let kind = words.iter().position(|w| *w == ".entry" || *w == ".func");
            let Some(k) = kind else { continue };
            let is_entry = words[k] == ".entry";
            let at = line.find(words[k]).unwrap_or(0) + words[k].len();
            rest = &line[at..];
            header = Some((is_entry, String::new()));
        }
        let Some((is_entry, mut text)) = header.take() else {
            continue;
        };
        match rest.find(['{', ';']) {
            Some(i) if rest.as_bytes()[i] == b'{' => {
                text.push_str(&rest[..i]);
                let name = decl_name(&text, is_entry);
                let open = &rest[i..];
                let depth = brace_depth(0, open);
                let mut b = open.to_string();
                b.push('\n');
                if depth == 0 {
                    let map = if is_entry { &mut module.entries } else { &mut module.funcs };
                    map.insert(name, b);
                } else {
                    body = Some((is_entry, name, b, depth));
                }
            }
            // A declaration without a body (`.extern .func f(...);`).
            Some(_) => {}
            None => {
                text.push_str(rest);
                text.push('\n');
                header = Some((is_entry, text));
            }
        }
    }
    module
}

fn brace_depth(mut depth: usize, line: &str) -> usize {
    for c in line.chars() {
        match c {
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    depth
}

/// The name in a declaration header (the text after `.entry`/`.func`):
/// `name(params)` or, for `.func`, `(.param .b32 retval) name(params)`.
fn decl_name(header: &str, is_entry: bool) -> String {
    let mut rest = header.trim_start();
    if !is_entry && rest.starts_with('(') {
        rest = rest.find(')').map_or("", |close| rest[close + 1..].trim_start());
    }
    rest.chars().take_while(|c| c.is_ascii_alphanumeric() || "_$.".contains(*c)).collect()
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
            rest = rest[close + 1..].trim_start().trim_start_matches(',').trim_start();
        }
        let name: String = rest.chars().take_while(|c| c.is_ascii_alphanumeric() || "_$.".contains(*c)).collect();
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
    fn refuses_entries_whose_block_cannot_hold_their_registers() {
        assert_eq!(block_size("segmented_spine_sum_i32_b1024"), Some(1024));
        assert_eq!(block_size("reduce_by_key_sum_u64_i32_b256"), Some(256));
        assert_eq!(block_size("scan_blelloch"), None);
        assert_eq!(block_size("odd_b"), None);
        assert_eq!(block_size("odd_b12x"), None);
        // 64 registers fit 1024 threads; 65 round up to 72 and do not.
        assert_eq!(launch_problem("spine_b1024", Some(64)), None);
        assert!(launch_problem("spine_b1024", Some(65)).is_some_and(|p| p.contains("73728")));
        assert!(launch_problem("spine_b1024", Some(67)).is_some());
        assert_eq!(launch_problem("scan_b512", Some(128)), None);
        assert!(launch_problem("scan_b512", Some(129)).is_some());
        assert_eq!(launch_problem("scan_b256", Some(255)), None);
        // No block size in the name, or no register count: nothing to say.
        assert_eq!(launch_problem("scan_blelloch", Some(255)), None);
        assert_eq!(launch_problem("spine_b1024", None), None);
    }

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
        assert_eq!((helper.stack, helper.spill_stores, helper.spill_loads), (8, 4, 4));
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
            ["reduce_inline_shfl", "reduce_shuffle_broken", "reduce_warp_shuffle_sum_i32"]
        );
        assert!(m.funcs.contains_key("warp_sum"));
        assert!(!m.funcs.contains_key("vprintf"));
        assert_eq!(m.reaches("reduce_warp_shuffle_sum_i32", "shfl.sync").as_deref(), Some("warp_sum"));
        assert_eq!(m.reaches("reduce_inline_shfl", "shfl.sync").as_deref(), Some("reduce_inline_shfl"));
        assert_eq!(m.reaches("reduce_shuffle_broken", "shfl.sync"), None);
    }
}
