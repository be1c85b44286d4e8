//! [`Launch`]: who this process is in a multi-process run, read from the variables its launcher
//! set: `lockstep run`'s own, else Open MPI's, PMI's (MPICH, Intel MPI, Hydra) or Slurm's.
//!
//! **Invariants.** A `Launch` has `size ≥ 1`, `rank < size`, `local_rank < size`, and a `master`
//! of the form `host:port` (an IPv6 host in brackets) with a port in `1..=65535`. The first
//! launcher whose rank variable is present decides everything (variables of the others are not
//! mixed in), except the rendezvous address, which is read the same way for every launcher:
//! `LOCKSTEP_MASTER`, else torchrun's `MASTER_ADDR` + `MASTER_PORT`, else [`DEFAULT_MASTER`] on
//! the loopback interface. That default only works when every rank runs on one host: **a run
//! over several hosts must set `LOCKSTEP_MASTER` (or `MASTER_ADDR` and `MASTER_PORT`) to an
//! address of the host of rank 0 that every rank can reach**, the same on every rank.
//! [`Launch::from_vars`] reads through a function, so every rule is testable without touching
//! the process environment.

use crate::error::{Error, Result};

/// `lockstep run`'s variable: this process's rank in the run.
pub const RANK_VAR: &str = "LOCKSTEP_RANK";
/// `lockstep run`'s variable: ranks in the run.
pub const WORLD_SIZE_VAR: &str = "LOCKSTEP_WORLD_SIZE";
/// `lockstep run`'s variable: this process's rank among those of its host (its GPU).
pub const LOCAL_RANK_VAR: &str = "LOCKSTEP_LOCAL_RANK";
/// The rendezvous address, `host:port` of rank 0 (every launcher).
pub const MASTER_VAR: &str = "LOCKSTEP_MASTER";
/// The rendezvous address when no variable names one: rank 0 on this host (one-host runs only).
pub const DEFAULT_MASTER: &str = "127.0.0.1:29517";

/// Who this process is in a multi-process run, and where the ranks meet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Launch {
    /// This process's rank, `0..size`.
    pub rank: usize,
    /// Ranks (processes) in the run, at least 1.
    pub size: usize,
    /// This process's rank among the ranks of its host (the GPU it takes).
    pub local_rank: usize,
    /// Where rank 0 serves the rendezvous: `host:port`.
    pub master: String,
    /// Which launcher's variables were read: `"lockstep"`, `"Open MPI"`, `"PMI"` or `"Slurm"`.
    pub source: &'static str,
}

/// One launcher's variables: `(source, rank, size, local ranks in order of preference)`.
const LAUNCHERS: [(&str, &str, &str, &[&str]); 4] = [
    ("lockstep", RANK_VAR, WORLD_SIZE_VAR, &[LOCAL_RANK_VAR]),
    ("Open MPI", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", &["OMPI_COMM_WORLD_LOCAL_RANK"]),
    ("PMI", "PMI_RANK", "PMI_SIZE", &["MPI_LOCALRANKID", "PMI_LOCAL_RANK"]),
    ("Slurm", "SLURM_PROCID", "SLURM_NTASKS", &["SLURM_LOCALID"]),
];

impl Launch {
    /// The launch described by this process's environment ([`Launch::from_vars`] over
    /// `std::env::var`); `Ok(None)` when no launcher's variables are set (a plain run).
    pub fn from_env() -> Result<Option<Launch>> {
        Launch::from_vars(|name| std::env::var(name).ok())
    }

    /// The launch described by the variables `get` returns (`None`: unset; a value of blanks
    /// counts as unset). Launchers in order: `lockstep run` (`LOCKSTEP_RANK`,
    /// `LOCKSTEP_WORLD_SIZE`, `LOCKSTEP_LOCAL_RANK`, default: the rank), Open MPI
    /// (`OMPI_COMM_WORLD_RANK`, `_SIZE`, `_LOCAL_RANK`), PMI (`PMI_RANK`, `PMI_SIZE`, local rank
    /// from `MPI_LOCALRANKID` or `PMI_LOCAL_RANK`), Slurm (`SLURM_PROCID`, `SLURM_NTASKS`,
    /// `SLURM_LOCALID`); for the last three an unset local rank is 0. The master address: see
    /// the module documentation. `Ok(None)` when none of the rank variables is set.
    ///
    /// Errors ([`Error::InvalidInput`], naming the variable): a value that is not a whole
    /// number, a rank variable without its size variable, a size of 0, a rank or local rank
    /// not below the size, a master address without a port (or with a bad one).
    pub fn from_vars(get: impl Fn(&str) -> Option<String>) -> Result<Option<Launch>> {
        let get = |name: &str| get(name).filter(|v| !v.trim().is_empty());
        let Some((source, rank_var, size_var, local_vars)) =
            LAUNCHERS.iter().copied().find(|(_, rank_var, _, _)| get(rank_var).is_some())
        else {
            return Ok(None);
        };
        let rank = number(rank_var, get(rank_var))?;
        let Some(size_text) = get(size_var) else {
            return Err(invalid(format!("{rank_var} is set but {size_var} is not; the launcher must set both")));
        };
        let size = number(size_var, Some(size_text))?;
        if size == 0 {
            return Err(invalid(format!("{size_var}=0: a run needs at least one rank")));
        }
        if rank >= size {
            return Err(invalid(format!("{rank_var}={rank} is not below {size_var}={size}")));
        }
        let local = local_vars.iter().find_map(|v| get(v).map(|text| (*v, text)));
        let local_rank = match local {
            Some((var, text)) => {
                let local_rank = number(var, Some(text))?;
                if local_rank >= size {
                    return Err(invalid(format!("{var}={local_rank} is not below {size_var}={size}")));
                }
                local_rank
            }
            // Our own launcher always sets it; set by hand, the ranks are most likely on one host.
            None if source == "lockstep" => rank,
            None => 0,
        };
        let master = master(&get)?;
        Ok(Some(Launch { rank, size, local_rank, master, source }))
    }
}

/// The rendezvous address: `LOCKSTEP_MASTER`, else `MASTER_ADDR` + `MASTER_PORT`, else the
/// default on this host.
fn master(get: &impl Fn(&str) -> Option<String>) -> Result<String> {
    if let Some(m) = get(MASTER_VAR) {
        check_master(MASTER_VAR, &m)?;
        return Ok(m.trim().to_string());
    }
    if let Some(addr) = get("MASTER_ADDR") {
        let addr = addr.trim();
        let Some(port) = get("MASTER_PORT") else {
            return Err(invalid(format!(
                "MASTER_ADDR={addr} is set but MASTER_PORT is not; set both (or {MASTER_VAR}=host:port)"
            )));
        };
        let host = if addr.contains(':') && !addr.starts_with('[') { format!("[{addr}]") } else { addr.to_string() };
        let m = format!("{host}:{}", port.trim());
        check_master("MASTER_ADDR/MASTER_PORT", &m)?;
        return Ok(m);
    }
    Ok(DEFAULT_MASTER.to_string())
}

/// Checks that `value` (read from `what`, named in the error) is a rendezvous address
/// `host:port`: a host (an IPv6 one in brackets) and a port in `1..=65535`.
pub fn check_master(what: &str, value: &str) -> Result<()> {
    let value = value.trim();
    let bad = |why: &str| Error::InvalidInput {
        what: "rendezvous address",
        why: format!("{what}={value}: {why}; give host:port (e.g. {DEFAULT_MASTER})"),
    };
    let Some((host, port)) = value.rsplit_once(':') else {
        return Err(bad("no port"));
    };
    if host.is_empty() || host == "[" {
        return Err(bad("no host"));
    }
    if host.contains(':') && !(host.starts_with('[') && host.ends_with(']')) {
        return Err(bad("an IPv6 host must be in brackets"));
    }
    if port.is_empty() {
        return Err(bad("no port"));
    }
    match port.parse::<u16>() {
        Ok(0) => Err(bad("port 0 is not a port every rank can find")),
        Ok(_) => Ok(()),
        Err(_) => Err(bad(&format!("`{port}` is not a port (1 to 65535)"))),
    }
}

fn number(var: &str, text: Option<String>) -> Result<usize> {
    let text = text.unwrap_or_default();
    text.trim().parse::<usize>().map_err(|_| invalid(format!("{var}=`{text}` is not a whole number")))
}

fn invalid(why: String) -> Error {
    Error::InvalidInput { what: "launcher variables", why }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn read(vars: &[(&str, &str)]) -> Result<Option<Launch>> {
        let map: HashMap<String, String> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        Launch::from_vars(|name| map.get(name).cloned())
    }

    fn launch(vars: &[(&str, &str)]) -> Launch {
        read(vars).unwrap().unwrap()
    }

    fn refused(vars: &[(&str, &str)], words: &[&str]) {
        let e = read(vars).unwrap_err();
        assert!(matches!(e, Error::InvalidInput { .. }), "{e:?}");
        let text = e.to_string();
        for w in words {
            assert!(text.contains(w), "`{text}` lacks `{w}`");
        }
    }

    #[test]
    fn no_launcher_is_a_plain_run() {
        assert_eq!(read(&[]).unwrap(), None);
        assert_eq!(read(&[("MASTER_ADDR", "node1"), ("MASTER_PORT", "1234"), ("LOCKSTEP_RANK", " ")]).unwrap(), None);
    }

    #[test]
    fn lockstep_run_variables() {
        let l = launch(&[
            ("LOCKSTEP_RANK", "3"),
            ("LOCKSTEP_WORLD_SIZE", "8"),
            ("LOCKSTEP_LOCAL_RANK", "1"),
            ("LOCKSTEP_MASTER", "node0:4000"),
        ]);
        assert_eq!(l, Launch { rank: 3, size: 8, local_rank: 1, master: "node0:4000".into(), source: "lockstep" });
        // Without a local rank: the rank (one host); without a master: the default.
        let l = launch(&[("LOCKSTEP_RANK", "2"), ("LOCKSTEP_WORLD_SIZE", "4")]);
        assert_eq!((l.local_rank, l.master.as_str()), (2, DEFAULT_MASTER));
    }

    #[test]
    fn lockstep_run_wins_over_the_others() {
        let l = launch(&[
            ("LOCKSTEP_RANK", "1"),
            ("LOCKSTEP_WORLD_SIZE", "2"),
            ("OMPI_COMM_WORLD_RANK", "0"),
            ("OMPI_COMM_WORLD_SIZE", "1"),
            ("SLURM_PROCID", "0"),
            ("SLURM_NTASKS", "1"),
        ]);
        assert_eq!((l.rank, l.size, l.source), (1, 2, "lockstep"));
    }

    #[test]
    fn open_mpi_variables() {
        let l = launch(&[
            ("OMPI_COMM_WORLD_RANK", "5"),
            ("OMPI_COMM_WORLD_SIZE", "6"),
            ("OMPI_COMM_WORLD_LOCAL_RANK", "1"),
            ("SLURM_PROCID", "0"),
            ("SLURM_NTASKS", "1"),
        ]);
        assert_eq!(l, Launch { rank: 5, size: 6, local_rank: 1, master: DEFAULT_MASTER.into(), source: "Open MPI" });
        let l = launch(&[("OMPI_COMM_WORLD_RANK", "0"), ("OMPI_COMM_WORLD_SIZE", "2")]);
        assert_eq!(l.local_rank, 0);
    }

    #[test]
    fn pmi_variables() {
        let l = launch(&[("PMI_RANK", "2"), ("PMI_SIZE", "4"), ("MPI_LOCALRANKID", "0"), ("PMI_LOCAL_RANK", "3")]);
        assert_eq!((l.rank, l.size, l.local_rank, l.source), (2, 4, 0, "PMI"));
        let l = launch(&[("PMI_RANK", "2"), ("PMI_SIZE", "4"), ("PMI_LOCAL_RANK", "3")]);
        assert_eq!(l.local_rank, 3);
        let l = launch(&[("PMI_RANK", "2"), ("PMI_SIZE", "4")]);
        assert_eq!(l.local_rank, 0);
    }

    #[test]
    fn slurm_variables() {
        let l = launch(&[("SLURM_PROCID", "7"), ("SLURM_NTASKS", "16"), ("SLURM_LOCALID", "3")]);
        assert_eq!(l, Launch { rank: 7, size: 16, local_rank: 3, master: DEFAULT_MASTER.into(), source: "Slurm" });
    }

    #[test]
    fn the_master_address() {
        let base = [("SLURM_PROCID", "0"), ("SLURM_NTASKS", "2")];
        let with = |extra: &[(&'static str, &'static str)]| {
            let mut v = base.to_vec();
            v.extend_from_slice(extra);
            v
        };
        assert_eq!(launch(&with(&[("MASTER_ADDR", "node9"), ("MASTER_PORT", "29500")])).master, "node9:29500");
        assert_eq!(launch(&with(&[("MASTER_ADDR", "::1"), ("MASTER_PORT", "29500")])).master, "[::1]:29500");
        let both = with(&[("LOCKSTEP_MASTER", "a:1"), ("MASTER_ADDR", "b"), ("MASTER_PORT", "2")]);
        assert_eq!(launch(&both).master, "a:1");
        assert_eq!(launch(&with(&[("LOCKSTEP_MASTER", "[fe80::1]:7")])).master, "[fe80::1]:7");
    }

    #[test]
    fn numbers_that_are_not_numbers() {
        refused(&[("LOCKSTEP_RANK", "one"), ("LOCKSTEP_WORLD_SIZE", "2")], &["LOCKSTEP_RANK", "one"]);
        refused(&[("LOCKSTEP_RANK", "0"), ("LOCKSTEP_WORLD_SIZE", "-2")], &["LOCKSTEP_WORLD_SIZE"]);
        refused(
            &[("LOCKSTEP_RANK", "0"), ("LOCKSTEP_WORLD_SIZE", "2"), ("LOCKSTEP_LOCAL_RANK", "x")],
            &["LOCKSTEP_LOCAL_RANK"],
        );
        refused(&[("OMPI_COMM_WORLD_RANK", "1.5"), ("OMPI_COMM_WORLD_SIZE", "2")], &["OMPI_COMM_WORLD_RANK"]);
        refused(&[("PMI_RANK", "0"), ("PMI_SIZE", "2"), ("MPI_LOCALRANKID", "?")], &["MPI_LOCALRANKID"]);
        refused(&[("SLURM_PROCID", "0"), ("SLURM_NTASKS", "2"), ("SLURM_LOCALID", "z")], &["SLURM_LOCALID"]);
    }

    #[test]
    fn ranks_and_sizes_out_of_range() {
        refused(&[("LOCKSTEP_RANK", "2"), ("LOCKSTEP_WORLD_SIZE", "2")], &["LOCKSTEP_RANK=2", "LOCKSTEP_WORLD_SIZE=2"]);
        refused(&[("PMI_RANK", "0"), ("PMI_SIZE", "0")], &["PMI_SIZE=0"]);
        refused(&[("SLURM_PROCID", "0"), ("SLURM_NTASKS", "2"), ("SLURM_LOCALID", "2")], &["SLURM_LOCALID=2"]);
        refused(&[("SLURM_PROCID", "0")], &["SLURM_NTASKS"]);
    }

    #[test]
    fn a_master_without_a_port() {
        let base = [("LOCKSTEP_RANK", "0"), ("LOCKSTEP_WORLD_SIZE", "2")];
        let with = |extra: (&'static str, &'static str)| {
            let mut v = base.to_vec();
            v.push(extra);
            v
        };
        refused(&with(("LOCKSTEP_MASTER", "node0")), &["LOCKSTEP_MASTER", "no port"]);
        refused(&with(("LOCKSTEP_MASTER", "node0:")), &["LOCKSTEP_MASTER", "no port"]);
        refused(&with(("LOCKSTEP_MASTER", ":80")), &["no host"]);
        refused(&with(("LOCKSTEP_MASTER", "node0:http")), &["not a port"]);
        refused(&with(("LOCKSTEP_MASTER", "node0:0")), &["port 0"]);
        refused(&with(("LOCKSTEP_MASTER", "fe80::1:80")), &["brackets"]);
        refused(&with(("MASTER_ADDR", "node0")), &["MASTER_PORT"]);
        let mut v = with(("MASTER_ADDR", "node0"));
        v.push(("MASTER_PORT", "70000"));
        refused(&v, &["MASTER_ADDR/MASTER_PORT", "70000"]);
    }
}
