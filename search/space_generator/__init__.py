"""Space generation: sketches from schedule rules, and candidates replayed from traces
(MetaSchedule's ``space_generator``)."""
from .post_order_apply import PostOrderApply, blocks_post_order
from .replay import replay_candidate, resample, sample_candidate

__all__ = ["PostOrderApply", "blocks_post_order", "replay_candidate", "sample_candidate", "resample"]
