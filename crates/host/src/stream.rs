//! Stream versions: the promise that a run's output bits stay the same across lockstep versions.
//!
//! Every canonical run (the golden table, `tests/golden/golden.txt`, and the CLI's
//! `crates/cli/tests/golden/cli.txt`) gives the same bits in every lockstep release of one
//! stream version, on every backend. A change that alters the bits of a canonical run is made
//! deliberately: [`STREAM_VERSION`] goes up, CHANGELOG.md says which runs changed and why, and
//! the golden tables are re-blessed (`LOCKSTEP_BLESS=1`), each changed row taking the new
//! version. A caller that needs the bits of a given version asks for it with [`check_stream`]
//! (the CLI's `--stream-version`): this build runs its own stream and refuses any other with an
//! error that says which version it produces, instead of silently giving other bits.

use crate::error::{Error, Result};

/// The version of lockstep's output streams: the bits of every canonical run. Raised (and
/// recorded in CHANGELOG.md) whenever a canonical run's bits change on purpose.
pub const STREAM_VERSION: u32 = 3;

/// This lockstep's version (the crate's).
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// `Ok` when `requested` is the stream version this build produces; otherwise an
/// [`Error::InvalidInput`] that names both (a run reproduced from an older file then fails
/// before any work instead of giving other bits).
pub fn check_stream(requested: u32) -> Result<()> {
    if requested == STREAM_VERSION {
        return Ok(());
    }
    let why = if requested > STREAM_VERSION {
        format!(
            "stream {requested} is newer than this lockstep ({VERSION}), which produces stream {STREAM_VERSION}; \
             use the lockstep release that wrote the file (its .json sidecar names it)"
        )
    } else {
        format!(
            "this lockstep ({VERSION}) produces stream {STREAM_VERSION}, not {requested}; the runs whose bits \
             changed since are listed in CHANGELOG.md — use a lockstep release of stream {requested} to reproduce them"
        )
    };
    Err(Error::InvalidInput { what: "stream version", why })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_this_builds_stream_is_accepted() {
        assert!(check_stream(STREAM_VERSION).is_ok());
        let older = check_stream(0).unwrap_err().to_string();
        assert!(older.contains("CHANGELOG") && older.contains(&format!("stream {STREAM_VERSION}")), "{older}");
        let newer = check_stream(STREAM_VERSION + 1).unwrap_err().to_string();
        assert!(newer.contains("newer"), "{newer}");
    }
}
