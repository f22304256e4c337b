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

/// Renders a note into `note` (cleared first) so that it sits on a line of its own: after
/// a line break when the reasoning it joins is `mid_line`. Returns whether there is a note
/// (`render` may write nothing).
pub(crate) fn note_line(
    note: &mut String,
    mid_line: bool,
    render: impl FnOnce(&mut String),
) -> bool {
    note.clear();
    if mid_line {
        note.push('\n');
    }
    let start = note.len();
    render(note);
    note.len() > start
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
