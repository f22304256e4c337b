//! Short, human notes for what the agent did on its own (tools, reconnects), shown in the
//! reasoning channel.

use crate::event::{ActivityPhase, AgentActivity, Progress, ToolOutcome};

/// Appends the note for `activity` to `out` as one line, or nothing when the activity is
/// not worth a note (a successful completion: its start already said what ran).
pub(crate) fn activity_note(activity: &AgentActivity<'_>, out: &mut String) {
    let outcome = match activity.phase {
        ActivityPhase::Started => None,
        ActivityPhase::Completed {
            outcome: ToolOutcome::Success,
            started_seen: true,
        } => return,
        ActivityPhase::Completed { outcome, .. } => Some(outcome),
    };
    let started_seen = !matches!(
        activity.phase,
        ActivityPhase::Completed {
            started_seen: false,
            ..
        }
    );
    out.push('[');
    out.push_str(activity.tool);
    out.push(']');
    if !activity.summary.is_empty() && (outcome.is_none() || !started_seen) {
        out.push(' ');
        out.push_str(activity.summary);
    }
    if let Some(outcome) = outcome {
        out.push_str(if started_seen { " " } else { ": " });
        out.push_str(outcome.as_str());
    }
    out.push('\n');
}

/// Renders a note with `render` into `scratch` (cleared first), after a line break when
/// `line_break_first` (the reasoning it follows did not end a line): a note sits on a line
/// of its own. Returns whether a note was rendered: an activity worth none renders nothing.
pub(crate) fn note_on_own_line(
    scratch: &mut String,
    line_break_first: bool,
    render: impl FnOnce(&mut String),
) -> bool {
    scratch.clear();
    if line_break_first {
        scratch.push('\n');
    }
    let prefix = scratch.len();
    render(scratch);
    scratch.len() > prefix
}

/// Appends the note for a progress event, as one line.
pub(crate) fn progress_note(progress: &Progress, out: &mut String) {
    use std::fmt::Write;
    let _ = writeln!(out, "[cursor-agent] {progress}");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn note(phase: ActivityPhase) -> String {
        let activity = AgentActivity {
            call_id: "c",
            tool: "shell",
            phase,
            summary: "ls -la",
            arguments: None,
            model_call_id: None,
        };
        let mut out = String::new();
        activity_note(&activity, &mut out);
        out
    }

    #[test]
    fn notes() {
        assert_eq!(note(ActivityPhase::Started), "[shell] ls -la\n");
        let done = ActivityPhase::Completed {
            outcome: ToolOutcome::Success,
            started_seen: true,
        };
        assert_eq!(note(done), "");
        let rejected = ActivityPhase::Completed {
            outcome: ToolOutcome::Rejected,
            started_seen: true,
        };
        assert_eq!(note(rejected), "[shell] rejected\n");
        let orphan = ActivityPhase::Completed {
            outcome: ToolOutcome::Rejected,
            started_seen: false,
        };
        assert_eq!(note(orphan), "[shell] ls -la: rejected\n");
        let mut out = String::new();
        progress_note(&Progress::Retrying { attempt: 2 }, &mut out);
        assert_eq!(out, "[cursor-agent] retrying (attempt 2)\n");
    }
}
