"""Status feedback: the values a manifest's feedback rules read from its live
object, and the ``StatusFeedbackSynced`` condition (spec/agent.md section 11)."""

from workagent.feedback.reader import FeedbackResult, is_cheap, read_feedback

__all__ = ["FeedbackResult", "is_cheap", "read_feedback"]
