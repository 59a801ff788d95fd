"""Status feedback: the values a manifest's feedback rules read from its live
object, and the ``StatusFeedbackSynced`` condition (spec/agent.md section 11).

``read_feedback`` is the entry point; ``jsonpath`` is a port of client-go's
Kubernetes JSONPath, ``govalues`` renders values the way the Go agent does
(type names, ``%v``, ``encoding/json``), ``wellknown`` holds the
WellKnownStatus templates.
"""

from workagent.feedback.reader import FeedbackResult, is_cheap, read_feedback

__all__ = ["FeedbackResult", "is_cheap", "read_feedback"]
