//! Checkpoints that must be refused before any work (issue #25): corrupt (a flipped byte in the
//! header or the payload), truncated, extended, of another format version, of another family,
//! not a checkpoint at all, written for a run with other parameters — each an
//! `Error::Checkpoint` that says which; and a write that fails leaves the previous file whole
//! and no temporary file behind.

use lockstep::Error;
use lockstep::checkpoint::Header;
use lockstep::mg::{self, MgParams, RunState};
use lockstep::nbody::{Checkpoint, Mode, Params, System, init};
use std::path::{Path, PathBuf};

fn dir() -> PathBuf {
    let d = std::env::temp_dir().join(format!("lockstep-resume-errors-{}", std::process::id()));
    std::fs::create_dir_all(&d).expect("temp dir");
    d
}

fn params() -> Params<f64> {
    Params { g: 1.0, eps: 0.01, dt: 1e-3 }
}

fn nbody_file(path: &Path) -> Checkpoint<f64> {
    let s: System<f64> = init::plummer(5, 3);
    let mut c = Checkpoint::start(params(), Mode::Exact, s).expect("valid");
    c.step = 7;
    c.recording.steps = vec![0, 5];
    c.recording.energy = vec![-0.25, -0.25];
    c.save(path, &[("steps".into(), "10".into())]).expect("written");
    c
}

fn load(path: &Path) -> Result<Checkpoint<f64>, Error> {
    Checkpoint::<f64>::load(path, &params(), Mode::Exact, 5, &[("steps".into(), "10".into())])
}

fn refused(r: Result<impl std::fmt::Debug, Error>, needles: &[&str]) {
    match r {
        Err(e @ Error::Checkpoint { .. }) => {
            let msg = e.to_string();
            for n in needles {
                assert!(msg.contains(n), "`{msg}` does not mention `{n}`");
            }
        }
        other => panic!("expected a refused checkpoint mentioning {needles:?}, got {other:?}"),
    }
}

#[test]
fn a_whole_file_loads_back_equal() {
    let f = dir().join("whole.ckpt");
    let c = nbody_file(&f);
    assert_eq!(load(&f).expect("loads"), c);
}

#[test]
fn corrupt_truncated_and_foreign_files_are_refused() {
    let d = dir();
    let f = d.join("good.ckpt");
    nbody_file(&f);
    let good = std::fs::read(&f).expect("read");
    let variant = |name: &str, bytes: &[u8]| -> PathBuf {
        let p = d.join(name);
        std::fs::write(&p, bytes).expect("write");
        p
    };
    // a value inside the positions
    let mut b = good.clone();
    let at = good.windows(8).position(|w| w == b"pos\0\0\0\0\0").expect("pos section") + 24 + 13;
    b[at] ^= 1;
    refused(load(&variant("payload.ckpt", &b)), &["corrupt", "checksum"]);
    // the element type of a section
    let mut b = good.clone();
    b[at - 13 - 16] ^= 1;
    refused(load(&variant("type.ckpt", &b)), &["corrupt", "section `pos`"]);
    let mut b = good.clone();
    b[20] ^= 0x20;
    refused(load(&variant("header.ckpt", &b)), &["corrupt", "header"]);
    refused(load(&variant("short.ckpt", &good[..good.len() - 9])), &["truncated"]);
    refused(load(&variant("tiny.ckpt", &good[..10])), &["truncated"]);
    refused(load(&variant("empty.ckpt", &[])), &["truncated"]);
    let mut b = good.clone();
    b.extend_from_slice(b"tail");
    refused(load(&variant("long.ckpt", &b)), &["corrupt", "header says"]);
    let mut b = good.clone();
    b[8..12].copy_from_slice(&2u32.to_le_bytes());
    refused(load(&variant("v2.ckpt", &b)), &["format version 2", "reads version 1"]);
    refused(load(&variant("text.ckpt", b"x,y,z\n1,2,3\n0,0,0\n")), &["not a lockstep checkpoint"]);
    // another stream version (the header rewritten with a matching header checksum)
    let stream = d.join("stream.ckpt");
    let header = Header { stream: 99, ..Header::new("nbody", 0, vec![]) };
    lockstep::checkpoint::write(&stream, &header, &[]).expect("written");
    refused(load(&stream), &["stream version 99", "neither"]);
    refused(load(&d.join("missing.ckpt")), &["cannot be opened"]);
    // another family
    let params = MgParams::new(11, 3, 2, 5, 2);
    let mgf = d.join("mg.ckpt");
    RunState::start(&params, 1, 0, 2).expect("valid").save(&mgf, &[]).expect("written");
    refused(load(&mgf), &["checkpoint of `mg`", "not of `nbody`"]);
    refused(RunState::load(&f, &params, 1, 0, 2, &[]), &["checkpoint of `nbody`"]);
}

#[test]
fn other_parameters_are_refused_by_name() {
    let f = dir().join("params.ckpt");
    nbody_file(&f);
    let other = Params { dt: 2e-3, ..params() };
    refused(Checkpoint::<f64>::load(&f, &other, Mode::Exact, 5, &[("steps".into(), "10".into())]), &["dt ="]);
    refused(Checkpoint::<f64>::load(&f, &params(), Mode::Fast, 5, &[("steps".into(), "10".into())]), &["mode = exact"]);
    refused(Checkpoint::<f64>::load(&f, &params(), Mode::Exact, 6, &[("steps".into(), "10".into())]), &["n = 5"]);
    refused(Checkpoint::<f64>::load(&f, &params(), Mode::Exact, 5, &[("steps".into(), "11".into())]), &["steps = 10"]);
    refused(
        Checkpoint::<f32>::load(
            &f,
            &Params { g: 1.0, eps: 0.01, dt: 1e-3 },
            Mode::Exact,
            5,
            &[("steps".into(), "10".into())],
        ),
        &["precision = f64"],
    );
    let params = MgParams::new(11, 3, 2, 5, 2);
    let mgf = dir().join("mg-params.ckpt");
    RunState::start(&params, 1, 0, 2).expect("valid").save(&mgf, &[]).expect("written");
    refused(RunState::load(&mgf, &params, 2, 0, 2, &[]), &["seed = 1"]);
    refused(RunState::load(&mgf, &MgParams::new(11, 3, 2, 5, 3), 1, 0, 2, &[]), &["groups = 2"]);
    refused(RunState::load(&mgf, &params, 1, 0, 3, &[]), &["trials = 2"]);
    assert!(RunState::load(&mgf, &params, 1, 0, 2, &[]).is_ok());
}

#[test]
fn a_failed_write_leaves_the_old_file_and_no_temporary() {
    let d = dir().join("atomic");
    std::fs::create_dir_all(&d).expect("dir");
    let f = d.join("keep.ckpt");
    let c = nbody_file(&f);
    let before = std::fs::read(&f).expect("read");
    // A folder where the file should go: the rename fails after the temporary file is whole.
    let blocked = d.join("blocked");
    std::fs::create_dir_all(blocked.join("inside")).expect("dir");
    refused(c.save(&blocked, &[]).map(|_| ()), &["cannot be written"]);
    assert!(blocked.join("inside").is_dir(), "the folder in the way is untouched");
    assert_eq!(std::fs::read(&f).expect("read"), before);
    // Rewriting the same file replaces it whole; nothing else is left in the folder.
    c.save(&f, &[("steps".into(), "10".into())]).expect("rewritten");
    let names: Vec<String> = std::fs::read_dir(&d)
        .expect("list")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    assert!(names.iter().all(|n| n == "keep.ckpt" || n == "blocked"), "left behind: {names:?}");
    assert_eq!(load(&f).expect("loads"), c);
    let _ = mg::FAMILY;
}
