# A small GPT-2 (random weights, random tokens) trained by Hugging Face's Trainer: its real logs.
import torch
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments
torch.manual_seed(0)
class Tokens(torch.utils.data.Dataset):
    def __len__(self): return 20000
    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        ids = torch.randint(0, 8192, (256,), generator=g)
        return {"input_ids": ids, "labels": ids}
model = GPT2LMHeadModel(GPT2Config(vocab_size=8192, n_positions=256, n_embd=768, n_layer=8, n_head=12))
args = TrainingArguments(output_dir="/tmp/hf-out", max_steps=300, per_device_train_batch_size=32,
                         logging_steps=20, bf16=True, report_to="none", save_strategy="no",
                         dataloader_num_workers=2)
Trainer(model=model, args=args, train_dataset=Tokens()).train()
