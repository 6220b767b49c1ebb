"""`train-rm`'s progress line counts the tokens the trainer has read (it said "0 tok"): every batch's
non-padding tokens, chosen and rejected plans both, once per epoch."""

from orchrm.cli.progress import Mode, Reporter, format_line
from orchrm.cli.reward_model import _rm_info
from orchrm.cli.trainer_progress import trainer_progress
from orchrm.rm import RMConfig, train_reward_model
from orchrm.rm.encoding import encode
from synthetic_pairs import make_rows


def test_a_tiny_training_run_counts_every_token_it_reads():
    rows, config = make_rows(6), RMConfig(epochs=2, batch_size=4, max_length=64)
    reporter = Reporter(Mode.quiet)
    with reporter:
        result = train_reward_model(
            rows, [], config, progress=False, callbacks=[trainer_progress(reporter, "train-rm steps", _rm_info)]
        )
    stage = reporter.stages["train-rm steps"]
    tokenizer = result.model.tokenizer
    per_epoch = sum(
        len(encode(tokenizer, r.prompt, text, config.max_length)) for r in rows for text in (r.chosen, r.rejected)
    )
    assert stage.finished and stage.tokens == 2 * per_epoch > 0  # the padding of each batch is not counted
    assert f"{stage.tokens:,} tok" in format_line(stage.snapshot(stage.started))
