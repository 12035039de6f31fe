# An MLP trained by Lightning's Trainer on random data: its real progress bar and logs.
import torch, lightning.pytorch as pl
torch.manual_seed(0)
class M(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(2048, 8192), torch.nn.GELU(), torch.nn.Linear(8192, 8192), torch.nn.GELU(), torch.nn.Linear(8192, 2048))
    def training_step(self, batch, i):
        (x,) = batch
        loss = self.net(x).pow(2).mean()
        self.log("train_loss", loss, prog_bar=True)
        return loss
    def configure_optimizers(self): return torch.optim.AdamW(self.parameters(), lr=1e-4)
data = torch.utils.data.TensorDataset(torch.randn(300 * 512, 2048))
loader = torch.utils.data.DataLoader(data, batch_size=512)
pl.Trainer(max_steps=300, log_every_n_steps=20, precision="bf16-mixed", logger=False,
           enable_checkpointing=False, accelerator="gpu", devices=1).fit(M(), loader)
