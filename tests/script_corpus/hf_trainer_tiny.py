"""A Hugging Face ``Trainer`` fine-tuning a tiny BERT built from its config (no download) for
sequence classification, on random token ids; TrainingArguments as the course writes them,
without the speed settings (batch 16, no DataLoader workers, float32)."""

import torch
from torch.utils.data import Dataset
from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainingArguments


class RandomTokens(Dataset):
    def __init__(self, n=1024, length=32, vocab=1000):
        g = torch.Generator().manual_seed(0)
        self.ids = torch.randint(0, vocab, (n, length), generator=g)
        self.labels = torch.randint(0, 2, (n,), generator=g)

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "attention_mask": torch.ones_like(self.ids[i]), "labels": self.labels[i]}


def main():
    config = BertConfig(
        vocab_size=1000,
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=64,
        num_labels=2,
    )
    model = BertForSequenceClassification(config)
    args = TrainingArguments(
        output_dir="hf_trainer_out",
        per_device_train_batch_size=16,
        num_train_epochs=2,
        learning_rate=5e-5,
        logging_steps=50,
        disable_tqdm=True,
        save_strategy="no",
        report_to="none",
    )
    trainer = Trainer(model=model, args=args, train_dataset=RandomTokens())
    trainer.train()


if __name__ == "__main__":
    main()
