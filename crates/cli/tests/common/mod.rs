//! What the CLI suites share: waiting for a started `lockstep` with a time limit while its pipes
//! are read on threads (a chatty child never blocks on a full pipe), and starting one that is to
//! be stopped once a file appears.

// Each suite uses some of these.
#![allow(dead_code)]

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Starts `lockstep args…` (stdin and stdout null, stderr as given) and returns it once `file`
/// exists, the child has ended, or 60 s have passed.
pub fn start_until_file<S: AsRef<std::ffi::OsStr>>(args: &[S], stderr: Stdio, file: &Path) -> Child {
    let mut child = Command::new(env!("CARGO_BIN_EXE_lockstep"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(stderr)
        .spawn()
        .expect("spawning lockstep");
    let t = Instant::now();
    while !file.exists() && t.elapsed() < Duration::from_secs(60) {
        if child.try_wait().expect("wait").is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    child
}

/// How a child ended: its exit code (`None`: ended by a signal), what it printed and how long
/// it ran.
pub struct Ended {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    pub secs: f64,
}

/// Waits for `child` (started with piped stdout and stderr) at most `limit`; past it the child
/// is killed and the error says so.
pub fn finish(mut child: Child, limit: Duration) -> Result<Ended, String> {
    let t = Instant::now();
    let out = child.stdout.take().ok_or("no stdout")?;
    let err = child.stderr.take().ok_or("no stderr")?;
    let read = |mut pipe: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = pipe.read_to_string(&mut s);
            s
        })
    };
    let (ro, re) = (read(Box::new(out)), read(Box::new(err)));
    let status = loop {
        if let Some(st) = child.try_wait().map_err(|e| e.to_string())? {
            break st;
        }
        if t.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("HANG: still running after {limit:?} (killed)"));
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let secs = t.elapsed().as_secs_f64();
    Ok(Ended {
        code: status.code(),
        stdout: ro.join().unwrap_or_default(),
        stderr: re.join().unwrap_or_default(),
        secs,
    })
}
