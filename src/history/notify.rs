//! Which runs notify their user (`CRON_NOTIFY`, the daemon's `--notify`): one decision for
//! every channel, the mail of a run's output, `CRON_PING` and `CRON_WEBHOOK`. Pure.
//!
//! A run's [`Verdict`] is what the policy reads: it succeeded, it failed (a non-zero exit, a
//! signal, its time limit, or a slot that did not run), or it says nothing of the job (a slot
//! paused, on this host or in its cluster, or run by another host of it), which notifies under
//! no policy and leaves the entry's last verdict as it was.
//!
//! `change` needs the entry's previous verdict: the daemon keeps each entry's last runs in
//! memory and tells the job child at the fork whether the last one that said something failed
//! ([`crate::job::record::RunFacts::previous_failed`]). After a restart the daemon knows none:
//! the previous run counts as a success, so the first failure after a restart notifies and a
//! success does not.

use super::{End, Outcome, Reason, Result};
use crate::crontab::policy::Notify;

/// What a run tells of its entry, as the policy reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Succeeded,
    Failed,
    /// Paused (on this host or in its cluster), or run by another host: nothing of the job
    /// here.
    Silent,
}

impl Verdict {
    /// A run that ran: `end` and whether its time limit ended it.
    pub fn of_run(end: End, timed_out: bool) -> Verdict {
        match (end, timed_out) {
            (End::Exited(0), false) => Verdict::Succeeded,
            _ => Verdict::Failed,
        }
    }

    /// A slot that did not run, for `reason`.
    pub fn of_reason(reason: Reason) -> Verdict {
        match reason {
            Reason::Paused | Reason::OtherHost => Verdict::Silent,
            _ => Verdict::Failed,
        }
    }

    pub fn of(outcome: &Outcome) -> Verdict {
        match &outcome.result {
            Result::Ran(ran) => Verdict::of_run(ran.end, ran.timed_out),
            Result::NotRun { reason, .. } => Verdict::of_reason(*reason),
        }
    }
}

/// Whether a run with `verdict` notifies under `policy`; `previous_failed`: the entry's last
/// run that said something failed (read by `change` only).
pub fn wanted(policy: Notify, verdict: Verdict, previous_failed: bool) -> bool {
    match (policy, verdict) {
        (_, Verdict::Silent) | (Notify::Never, _) => false,
        (Notify::Always, _) => true,
        (Notify::Failure, v) => v == Verdict::Failed,
        (Notify::Change, Verdict::Failed) => !previous_failed,
        (Notify::Change, Verdict::Succeeded) => previous_failed,
    }
}

/// [`wanted`] for `outcome`.
pub fn wanted_outcome(policy: Notify, outcome: &Outcome, previous_failed: bool) -> bool {
    wanted(policy, Verdict::of(outcome), previous_failed)
}

/// Whether a run notifies its start (`CRON_PING`'s `/start`): only under `always`, since the
/// other policies know nothing of a run before its end.
pub fn start_wanted(policy: Notify) -> bool {
    policy == Notify::Always
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_policy_decides_every_kind_of_run_and_slot() {
        use Notify::*;
        let ran = [
            (End::Exited(0), false, Verdict::Succeeded),
            (End::Exited(1), false, Verdict::Failed),
            (End::Exited(0), true, Verdict::Failed),
            (End::Signaled(9), false, Verdict::Failed),
        ];
        for (end, timed_out, verdict) in ran {
            assert_eq!(
                Verdict::of_run(end, timed_out),
                verdict,
                "{end:?} {timed_out}"
            );
        }
        for reason in Reason::ALL {
            let verdict = Verdict::of_reason(reason);
            let silent = matches!(reason, Reason::Paused | Reason::OtherHost);
            assert_eq!(verdict == Verdict::Silent, silent, "{reason:?}");
            assert_eq!(verdict == Verdict::Failed, !silent, "{reason:?}");
        }
        // (policy, verdict, previous failed) -> notified
        let table = [
            (Always, Verdict::Succeeded, false, true),
            (Always, Verdict::Succeeded, true, true),
            (Always, Verdict::Failed, false, true),
            (Always, Verdict::Failed, true, true),
            (Failure, Verdict::Succeeded, false, false),
            (Failure, Verdict::Succeeded, true, false),
            (Failure, Verdict::Failed, false, true),
            (Failure, Verdict::Failed, true, true),
            (Change, Verdict::Succeeded, false, false),
            (Change, Verdict::Succeeded, true, true),
            (Change, Verdict::Failed, false, true),
            (Change, Verdict::Failed, true, false),
        ];
        for (policy, verdict, previous, notified) in table {
            assert_eq!(
                wanted(policy, verdict, previous),
                notified,
                "{policy:?} {verdict:?} previous failed: {previous}"
            );
        }
        for policy in Notify::ALL {
            for previous in [false, true] {
                assert!(!wanted(policy, Verdict::Silent, previous), "{policy:?}");
                assert!(!wanted(Never, Verdict::Failed, previous));
                assert!(!wanted(Never, Verdict::Succeeded, previous));
            }
            assert_eq!(start_wanted(policy), policy == Always);
        }
    }
}
