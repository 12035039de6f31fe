"""joules.integrations.transformers.JoulesCallback in a real Hugging Face Trainer (tiny GPT-2
made from a config, CPU), measuring two fake GPUs at 300 W each."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from fake_gpus import constant, h100  # noqa: E402
from joules.integrations.transformers import JoulesCallback  # noqa: E402

SEQ = 16
BATCH = 4


class Recorder(transformers.TrainerCallback):
    """Sees each log line as a reporting callback (W&B, TensorBoard) would."""

    def __init__(self) -> None:
        self.lines = []

    def on_log(self, args, state, control, logs=None, **kwargs):
        self.lines.append(dict(logs or {}))


def tiny_trainer(tmp_path, callbacks, steps=6):
    torch.manual_seed(0)
    config = transformers.GPT2Config(vocab_size=64, n_positions=SEQ, n_embd=32, n_layer=1,
                                     n_head=2)
    model = transformers.GPT2LMHeadModel(config)
    data = []
    for _ in range(BATCH * steps):
        ids = torch.randint(0, 64, (SEQ,))
        data.append({"input_ids": ids, "labels": ids.clone()})
    args = transformers.TrainingArguments(
        output_dir=str(tmp_path), max_steps=steps, per_device_train_batch_size=BATCH,
        logging_steps=2, report_to=[], use_cpu=True, save_strategy="no", disable_tqdm=True,
        include_num_input_tokens_seen=True, dataloader_num_workers=0)
    return transformers.Trainer(model=model, args=args, train_dataset=data, callbacks=callbacks)


def test_energy_per_step_and_per_token_reach_the_reporting_callbacks(gpus, tmp_path, capsys):
    gpus({"devices": [h100(constant(300)), h100(constant(300))]})
    reporter = Recorder()  # added before joules' callback, as the Trainer adds W&B's
    callback = JoulesCallback(cpu=False, gpus="all")
    trainer = tiny_trainer(tmp_path, [reporter, callback])
    trainer.train()
    lines = [line for line in reporter.lines if "loss" in line]
    assert len(lines) == 3, reporter.lines
    for line in lines:
        assert line["energy/step_j"] > 0
        assert line["energy/avg_power_w"] == pytest.approx(600.0, rel=0.01)
        # Every step saw BATCH x SEQ input tokens.
        assert line["energy/joules_per_token"] == pytest.approx(
            line["energy/step_j"] / (BATCH * SEQ), rel=1e-9)
    assert lines[-1]["energy/total_j"] == pytest.approx(callback.total_energy)
    assert callback.total_energy == pytest.approx(600.0 * callback.total_time, rel=0.01)
    assert callback.total_tokens == 6 * BATCH * SEQ
    # The whole training, steps and what lies between them, is in the result.
    assert callback.result is not None
    assert callback.result.total_energy >= callback.total_energy
    assert callback.result.total_energy == pytest.approx(600.0 * callback.result.time, rel=0.01)
    assert "joules: 'training': " in capsys.readouterr().err
    assert callback.monitor is None  # the monitor it opened is closed


def test_only_the_first_process_of_a_node_measures(gpus, tmp_path):
    gpus({"devices": [h100(constant(100))]})
    callback = JoulesCallback(cpu=False, gpus="all", summary=False)
    trainer = tiny_trainer(tmp_path, [callback], steps=2)

    class NotFirst(transformers.TrainerCallback):
        def on_train_begin(self, args, state, control, **kwargs):
            state.is_local_process_zero = False

    # As a second process of the node sees it (the Trainer sets the flag from its rank).
    trainer.callback_handler.callbacks.insert(0, NotFirst())
    trainer.train()
    assert callback.result is None and callback.total_energy == 0.0
