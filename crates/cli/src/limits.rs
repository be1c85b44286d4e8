//! How much host memory this process may still take: the smallest of the machine's
//! `MemAvailable`, the process's own address-space limit (`RLIMIT_AS`, `ulimit -v`, less what it
//! has mapped already) and its cgroup's limit (`memory.max` of cgroup v2, `memory.limit_in_bytes`
//! of v1, less the group's current use) — batch systems set the last two, and a run that fits
//! free RAM but not them would abort after its work.

use std::path::{Path, PathBuf};

/// One bound on the memory a run may take, and where it comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bound {
    /// Bytes available under this bound.
    pub bytes: u64,
    /// Where it comes from (`MemAvailable`, `RLIMIT_AS`, `cgroup memory.max`).
    pub source: &'static str,
}

/// The smallest of the bounds that can be read (`None`: none can).
pub fn host_bound() -> Option<Bound> {
    [mem_available(), address_space(), cgroup()].into_iter().flatten().min_by_key(|b| b.bytes)
}

/// `MemAvailable` of `/proc/meminfo`.
fn mem_available() -> Option<Bound> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let bytes = meminfo_kb(&info, "MemAvailable:")?.checked_mul(1024)?;
    Some(Bound { bytes, source: "MemAvailable" })
}

fn meminfo_kb(text: &str, key: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with(key))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// `RLIMIT_AS` (soft) less the process's mapped size (`VmSize` of `/proc/self/status`).
fn address_space() -> Option<Bound> {
    let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes one `rlimit` through a valid pointer to a local.
    let ok = unsafe { libc::getrlimit(libc::RLIMIT_AS, &mut lim) } == 0;
    if !ok || lim.rlim_cur == libc::RLIM_INFINITY {
        return None;
    }
    let limit: u64 = lim.rlim_cur;
    let used = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| meminfo_kb(&s, "VmSize:"))
        .and_then(|kb| kb.checked_mul(1024))
        .unwrap_or(0);
    Some(Bound { bytes: limit.saturating_sub(used), source: "RLIMIT_AS (ulimit -v)" })
}

/// The process's cgroup limit less its current use: v2 (`0::/path` in `/proc/self/cgroup`,
/// `memory.max` and `memory.current`), else v1 (`memory:/path`, `memory.limit_in_bytes` and
/// `memory.usage_in_bytes`).
fn cgroup() -> Option<Bound> {
    let text = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let root = Path::new("/sys/fs/cgroup");
    let (v2, v1) = cgroup_paths(&text);
    if let Some(rel) = v2 {
        for dir in [root.join(&rel), root.to_path_buf()] {
            if let Some(b) = limit_in(&dir, "memory.max", "memory.current", "cgroup memory.max") {
                return Some(b);
            }
        }
    }
    if let Some(rel) = v1 {
        let base = root.join("memory");
        for dir in [base.join(&rel), base.clone()] {
            if let Some(b) = limit_in(&dir, "memory.limit_in_bytes", "memory.usage_in_bytes", "cgroup memory limit") {
                return Some(b);
            }
        }
    }
    None
}

/// The v2 (`0::/path`) and v1 memory-controller (`N:memory:/path`) paths of
/// `/proc/self/cgroup`, relative.
pub fn cgroup_paths(text: &str) -> (Option<PathBuf>, Option<PathBuf>) {
    let (mut v2, mut v1) = (None, None);
    for line in text.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(_), Some(ctrl), Some(path)) = (parts.next(), parts.next(), parts.next()) else { continue };
        let rel = PathBuf::from(path.trim_start_matches('/'));
        if ctrl.is_empty() {
            v2 = Some(rel);
        } else if ctrl.split(',').any(|c| c == "memory") {
            v1 = Some(rel);
        }
    }
    (v2, v1)
}

/// A limit file's value: `None` for `max` (v2) or an unlimited v1 value (≥ 2^62).
pub fn parse_limit(text: &str) -> Option<u64> {
    let t = text.trim();
    if t == "max" {
        return None;
    }
    t.parse::<u64>().ok().filter(|&v| v < 1 << 62)
}

fn limit_in(dir: &Path, max: &str, current: &str, source: &'static str) -> Option<Bound> {
    let limit = parse_limit(&std::fs::read_to_string(dir.join(max)).ok()?)?;
    let used = std::fs::read_to_string(dir.join(current)).ok().and_then(|t| t.trim().parse::<u64>().ok()).unwrap_or(0);
    Some(Bound { bytes: limit.saturating_sub(used), source })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cgroup_files_are_read_as_the_kernel_writes_them() {
        let (v2, v1) = cgroup_paths("0::/user.slice/job-42\n");
        assert_eq!(v2, Some(PathBuf::from("user.slice/job-42")));
        assert_eq!(v1, None);
        let (v2, v1) = cgroup_paths("5:cpu,cpuacct:/\n4:memory:/slurm/uid_1/job_7\n0::/\n");
        assert_eq!(v1, Some(PathBuf::from("slurm/uid_1/job_7")));
        assert_eq!(v2, Some(PathBuf::from("")));
        assert_eq!(parse_limit("max\n"), None);
        assert_eq!(parse_limit("8589934592\n"), Some(8 << 30));
        assert_eq!(parse_limit("9223372036854771712"), None);
        assert_eq!(meminfo_kb("MemTotal: 100 kB\nMemAvailable:   2048 kB\n", "MemAvailable:"), Some(2048));
    }

    #[test]
    fn the_smallest_bound_wins() {
        if let (Some(b), Some(m)) = (host_bound(), mem_available()) {
            assert!(b.bytes <= m.bytes);
        }
    }
}
