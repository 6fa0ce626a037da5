"""The trainable models (torch): GM3C modality encoders + scoring functions, and the ordering models.

GM3C (paper 001 §3.4): frozen item vectors are projected and read by trainable BiLSTMs over steps (the
modality encoders); a scoring function turns context, question and choices into one score per choice.
Scoring functions: ``hasty-choice-only`` and ``hasty`` (paper 004 §4.1), ``impatient-reader`` (paper 001
App. E, after Hermann et al.), ``bidaf`` (App. E, after Seo et al., adapted to choices) and ``htrn``
(§3.4 + App. A: ``[CLS] context [SEP] query`` through a shallow transformer trained from scratch, the
CLS state scored by a linear layer).

Ordering models: ``pair-order`` (paper 003: a linear head over two steps' concatenated frozen features,
plus the procedure title), ``pairwise-sort`` (that head on every pair of a sequencing question, items
sorted by how often they are predicted first) and ``order-pointer`` (a pointer-network decoder over a
self-attention encoding of the steps, in the spirit of paper 000's BERSON).

Every network takes a batch (a dict of tensors from :class:`Batches`) and gives ``loss_and_correct``
for training and ``predict`` for evaluation.
"""

from __future__ import annotations

import abc
from collections.abc import Callable
from typing import Any, cast

import numpy as np
import torch
from torch import Tensor, nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from procbench.errors import BadInput
from procbench.models.featurisation import Featurised
from procbench.models.registry import get_model
from procbench.registry import load_object

__all__ = ["Batches", "Net", "build_net", "count_parameters"]

_NEG = -1e9
MAX_QUERY = 64


class Batches:
    """A featurised question set as tensors; ``batch(rows)`` gathers the vectors of those questions."""

    def __init__(self, feats: Featurised) -> None:
        self.feats = feats
        self.tables = {
            "items": torch.from_numpy(feats.items),
            "contexts": torch.from_numpy(feats.contexts),
            "procedures": torch.from_numpy(feats.procedures),
        }

    def batch(self, rows: np.ndarray) -> dict[str, Tensor]:
        """Tensors for questions ``rows``, padding trimmed to the longest of them."""
        f = self.feats

        def trim(mask: np.ndarray) -> int:
            return max(1, int(mask.sum(axis=-1).max())) if mask.size else 1

        lc, lq = trim(f.context_mask[rows]), trim(f.question_mask[rows])
        k = max(1, int(f.choice_valid[rows].sum(axis=1).max())) if f.choice_valid.size else 1
        lch, lu = trim(f.choice_mask[rows]), trim(f.query_mask[rows])
        items, contexts = self.tables["items"], self.tables["contexts"]

        def t(a: np.ndarray) -> Tensor:
            return torch.from_numpy(np.ascontiguousarray(a))

        out = {
            "context": contexts[t(f.context[rows, :lc])],
            "context_mask": t(f.context_mask[rows, :lc]),
            "question": items[t(f.question[rows, :lq])],
            "question_mask": t(f.question_mask[rows, :lq]),
            "placeholder": t(f.placeholder[rows, :lq]),
            "procedure": self.tables["procedures"][t(f.procedure[rows])],
            "answer": t(f.answer[rows]),
            "order": t(f.order[rows, :lq]),
        }
        if f.family == "mc":
            out.update(
                choices=items[t(f.choices[rows, :k, :lch])],
                choice_mask=t(f.choice_mask[rows, :k, :lch]),
                choice_valid=t(f.choice_valid[rows, :k]),
                query=items[t(f.query[rows, :k, :lu])],
                query_mask=t(f.query_mask[rows, :k, :lu]),
            )
        return out


def count_parameters(net: nn.Module) -> int:
    """Number of trainable parameters."""
    return sum(p.numel() for p in net.parameters() if p.requires_grad)


def _masked_mean(x: Tensor, mask: Tensor) -> Tensor:
    m = mask.unsqueeze(-1).to(x.dtype)
    return (x * m).sum(-2) / m.sum(-2).clamp(min=1.0)


def _masked_max(x: Tensor, mask: Tensor) -> Tensor:
    filled = x.masked_fill(~mask.unsqueeze(-1), float("-inf")).max(-2).values
    return torch.where(mask.any(-1, keepdim=True), filled, torch.zeros_like(filled))


def _masked_softmax(scores: Tensor, mask: Tensor, dim: int = -1) -> Tensor:
    """Softmax over ``mask``ed positions; all-masked rows give zeros (not NaN)."""
    weights = torch.softmax(scores.masked_fill(~mask, _NEG), dim=dim)
    return weights * mask.to(weights.dtype)


class SeqEncoder(nn.Module):
    """A modality encoder: frozen vectors -> linear projection -> BiLSTM over the sequence -> ``(..., L, H)``.

    With ``blank`` the positions marked as the placeholder get a learned vector instead of their (zero) input.
    """

    def __init__(self, in_dim: int, hidden: int, dropout: float, *, blank: bool = False) -> None:
        super().__init__()
        self.proj = nn.Sequential(nn.Dropout(dropout), nn.Linear(in_dim, hidden), nn.Tanh())
        self.lstm = nn.LSTM(hidden, hidden // 2, batch_first=True, bidirectional=True)
        self.blank = nn.Parameter(torch.randn(hidden) * 0.1) if blank else None

    def forward(self, x: Tensor, mask: Tensor, blanks: Tensor | None = None) -> Tensor:
        lead = x.shape[:-2]
        x, mask = x.reshape(-1, *x.shape[-2:]), mask.reshape(-1, mask.shape[-1])
        h = self.proj(x)
        if self.blank is not None and blanks is not None:
            h = torch.where(blanks.reshape(mask.shape).unsqueeze(-1), self.blank.expand_as(h), h)
        lengths = mask.sum(-1).clamp(min=1).cpu()
        packed = pack_padded_sequence(h, lengths, batch_first=True, enforce_sorted=False)
        out, _ = self.lstm(packed)
        out, _ = pad_packed_sequence(out, batch_first=True, total_length=x.shape[1])
        out = out * mask.unsqueeze(-1).to(out.dtype)
        return out.reshape(*lead, *out.shape[-2:])


class Net(nn.Module, abc.ABC):
    """Base class: a model trained with cross-entropy whose predictions the metrics read."""

    family = "mc"

    @abc.abstractmethod
    def loss_and_correct(self, batch: dict[str, Tensor]) -> tuple[Tensor, int, int]:
        """Mean loss of the batch, and how many of its decisions were right out of how many."""

    @abc.abstractmethod
    def predict(self, batch: dict[str, Tensor]) -> list[Any]:
        """One prediction per question: a choice index (MC), a label (pair order) or an order of positions."""


class MCNet(Net):
    """GM3C for multiple choice: modality encoders + one scoring function; cross-entropy over the choices."""

    family = "mc"

    def scores(self, batch: dict[str, Tensor]) -> Tensor:
        """``(B, K)`` scores; invalid choices get a large negative score."""
        raw = self.score(batch)
        return raw.masked_fill(~batch["choice_valid"], _NEG)

    @abc.abstractmethod
    def score(self, batch: dict[str, Tensor]) -> Tensor:
        """``(B, K)`` raw scores of the choices (the scoring function of the GM3C model)."""

    def loss_and_correct(self, batch: dict[str, Tensor]) -> tuple[Tensor, int, int]:
        scores = self.scores(batch)
        loss = nn.functional.cross_entropy(scores, batch["answer"])
        correct = int((scores.argmax(-1) == batch["answer"]).sum())
        return loss, correct, len(scores)

    def predict(self, batch: dict[str, Tensor]) -> list[Any]:
        return [int(i) for i in self.scores(batch).argmax(-1)]


class HastyChoiceOnly(MCNet):
    """Paper 004's "hasty student, choice only": each choice through a BiLSTM, then a linear score."""

    def __init__(self, dims: dict[str, int], hidden: int, dropout: float) -> None:
        super().__init__()
        self.choice = SeqEncoder(dims["item"], hidden, dropout)
        self.out = nn.Linear(hidden, 1)

    def score(self, batch: dict[str, Tensor]) -> Tensor:
        encoded = _masked_mean(self.choice(batch["choices"], batch["choice_mask"]), batch["choice_mask"])
        return self.out(encoded).squeeze(-1)


class HastyStudent(MCNet):
    """Paper 004's hasty student: question and choices through BiLSTMs, score = -distance between them."""

    def __init__(self, dims: dict[str, int], hidden: int, dropout: float) -> None:
        super().__init__()
        self.question = SeqEncoder(dims["item"], hidden, dropout, blank=True)
        self.choice = SeqEncoder(dims["item"], hidden, dropout)

    def score(self, batch: dict[str, Tensor]) -> Tensor:
        q = _masked_mean(
            self.question(batch["question"], batch["question_mask"], batch["placeholder"]), batch["question_mask"]
        )
        c = _masked_mean(self.choice(batch["choices"], batch["choice_mask"]), batch["choice_mask"])
        return -((q.unsqueeze(1) - c).pow(2).sum(-1) + 1e-6).sqrt()


class ImpatientReader(MCNet):
    """Recurrent attention over the context, once per question item (the placeholder skipped); the joint
    embedding is compared with each choice by scaled cosine similarity (paper 001 App. E)."""

    def __init__(self, dims: dict[str, int], hidden: int, dropout: float) -> None:
        super().__init__()
        self.context = SeqEncoder(dims["context"], hidden, dropout)
        self.question = SeqEncoder(dims["item"], hidden, dropout, blank=True)
        self.choice = SeqEncoder(dims["item"], hidden, dropout)
        self.w_dm = nn.Linear(hidden, hidden, bias=False)
        self.w_rm = nn.Linear(hidden, hidden, bias=False)
        self.w_qm = nn.Linear(hidden, hidden)
        self.w_ms = nn.Linear(hidden, 1, bias=False)
        self.w_rr = nn.Linear(hidden, hidden)
        self.w_rg = nn.Linear(hidden, hidden, bias=False)
        self.w_qg = nn.Linear(hidden, hidden)
        self.log_scale = nn.Parameter(torch.tensor(float(np.log(5.0))))

    def score(self, batch: dict[str, Tensor]) -> Tensor:
        ctx_mask, q_mask = batch["context_mask"], batch["question_mask"]
        y_d = self.context(batch["context"], ctx_mask)
        y_q = self.question(batch["question"], q_mask, batch["placeholder"])
        reads = q_mask & ~batch["placeholder"]
        r = y_d.new_zeros(y_d.shape[0], y_d.shape[-1])
        keys = self.w_dm(y_d)
        for i in range(y_q.shape[1]):
            m = torch.tanh(keys + (self.w_rm(r) + self.w_qm(y_q[:, i])).unsqueeze(1))
            s = _masked_softmax(self.w_ms(m).squeeze(-1), ctx_mask)
            updated = (s.unsqueeze(-1) * y_d).sum(1) + torch.tanh(self.w_rr(r))
            r = torch.where(reads[:, i : i + 1], updated, r)
        u = _masked_mean(y_q, q_mask)
        g = torch.tanh(self.w_rg(r) + self.w_qg(u))
        c = _masked_mean(self.choice(batch["choices"], batch["choice_mask"]), batch["choice_mask"])
        cosine = nn.functional.cosine_similarity(g.unsqueeze(1), c, dim=-1, eps=1e-6)
        return self.log_scale.exp() * cosine


class BiDAF(MCNet):
    """Bi-directional attention flow between the context and each choice's query (paper 001 App. E).

    Context-to-query and query-to-context attention over the trilinear similarity, a modelling BiLSTM over
    ``[h; u~; h*u~; h*h~]``, max-pooled and scored together with the pooled query.
    """

    def __init__(self, dims: dict[str, int], hidden: int, dropout: float) -> None:
        super().__init__()
        self.context = SeqEncoder(dims["context"], hidden, dropout)
        self.query = SeqEncoder(dims["item"], hidden, dropout)
        self.w_h = nn.Linear(hidden, 1, bias=False)
        self.w_u = nn.Linear(hidden, 1, bias=False)
        self.w_hu = nn.Parameter(torch.randn(hidden) * 0.1)
        self.modelling = nn.LSTM(4 * hidden, hidden // 2, batch_first=True, bidirectional=True)
        self.out = nn.Linear(2 * hidden, 1)

    def score(self, batch: dict[str, Tensor]) -> Tensor:
        b, k = batch["query"].shape[:2]
        u_mask = batch["query_mask"].reshape(b * k, -1)
        u = self.query(batch["query"], batch["query_mask"]).reshape(b * k, u_mask.shape[1], -1)
        h = self.context(batch["context"], batch["context_mask"]).repeat_interleave(k, dim=0)
        h_mask = batch["context_mask"].repeat_interleave(k, dim=0)
        sim = self.w_h(h) + self.w_u(u).transpose(1, 2) + (h * self.w_hu) @ u.transpose(1, 2)  # (BK, T, J)
        c2q = _masked_softmax(sim, u_mask.unsqueeze(1)) @ u
        best = sim.masked_fill(~u_mask.unsqueeze(1), _NEG).max(-1).values
        q2c = (_masked_softmax(best, h_mask).unsqueeze(-1) * h).sum(1, keepdim=True)
        g = torch.cat([h, c2q, h * c2q, h * q2c], dim=-1)
        lengths = h_mask.sum(-1).clamp(min=1).cpu()
        packed = pack_padded_sequence(g, lengths, batch_first=True, enforce_sorted=False)
        modelled, _ = self.modelling(packed)
        modelled, _ = pad_packed_sequence(modelled, batch_first=True, total_length=g.shape[1])
        pooled = torch.cat([_masked_max(modelled, h_mask), _masked_mean(u, u_mask)], dim=-1)
        return self.out(pooled).reshape(b, k)


class HTRN(MCNet):
    """Paper 001's hierarchical transformer: BiLSTM-encoded context steps and query items form
    ``[CLS] c_1 .. c_N [SEP] u_1 .. u_M`` (one sequence per choice); a transformer trained from scratch reads
    it and a linear layer scores the CLS state."""

    def __init__(
        self, dims: dict[str, int], hidden: int, dropout: float, *, layers: int, heads: int, ffn: int, max_context: int
    ) -> None:
        super().__init__()
        self.context = SeqEncoder(dims["context"], hidden, dropout)
        self.query = SeqEncoder(dims["item"], hidden, dropout)
        self.cls = nn.Parameter(torch.randn(hidden) * 0.02)
        self.sep = nn.Parameter(torch.randn(hidden) * 0.02)
        self.segment = nn.Embedding(2, hidden)
        self.context_position = nn.Embedding(max_context, hidden)
        self.query_position = nn.Embedding(MAX_QUERY, hidden)
        layer = nn.TransformerEncoderLayer(
            hidden, heads, dim_feedforward=ffn, dropout=dropout, batch_first=True, norm_first=True
        )
        self.transformer = nn.TransformerEncoder(layer, layers, norm=nn.LayerNorm(hidden), enable_nested_tensor=False)
        self.out = nn.Linear(hidden, 1)

    def score(self, batch: dict[str, Tensor]) -> Tensor:
        b, k, lu = batch["query"].shape[:3]
        if lu > MAX_QUERY:
            raise BadInput(f"htrn reads at most {MAX_QUERY} query items, this question has {lu}")
        lc = batch["context"].shape[1]
        u = self.query(batch["query"], batch["query_mask"]).reshape(b * k, lu, -1)
        u = u + self.query_position.weight[:lu] + self.segment.weight[1]
        c = self.context(batch["context"], batch["context_mask"])
        c = (c + self.context_position.weight[:lc] + self.segment.weight[0]).repeat_interleave(k, dim=0)
        special = torch.stack([self.cls + self.segment.weight[0], self.sep + self.segment.weight[0]])
        cls, sep = special[0].expand(b * k, 1, -1), special[1].expand(b * k, 1, -1)
        tokens = torch.cat([cls, c, sep, u], dim=1)
        ones = torch.ones(b * k, 1, dtype=torch.bool)
        mask = torch.cat(
            [ones, batch["context_mask"].repeat_interleave(k, dim=0), ones, batch["query_mask"].reshape(b * k, lu)],
            dim=1,
        )
        encoded = self.transformer(tokens, src_key_padding_mask=~mask)
        return self.out(encoded[:, 0]).reshape(b, k)


class PairHead(Net):
    """Paper 003's linear head: ``W [x_a; x_b; title] + b`` -> logits of ("inverted", "in order").

    On pair-order questions it reads the two steps as shown; for ``pairwise-sort`` it scores every ordered
    pair of a sequencing question's steps and sorts the steps by their expected number of wins.
    """

    def __init__(self, dims: dict[str, int], *, title: bool, sequencing: bool) -> None:
        super().__init__()
        self.family = "sequencing" if sequencing else "pair-order"
        self.title = title
        d = dims["item"]
        self.first = nn.Linear(d, 2)
        self.second = nn.Linear(d, 2, bias=False)
        self.context = nn.Linear(dims["procedure"], 2, bias=False) if title else None

    def _bias(self, batch: dict[str, Tensor]) -> Tensor:
        if self.context is None:
            return torch.zeros(batch["question"].shape[0], 2)
        return self.context(batch["procedure"])

    def _pair_logits(self, batch: dict[str, Tensor]) -> Tensor:
        """``(B, L, L, 2)``: logits for item i shown before item j."""
        x = batch["question"]
        return (self.first(x).unsqueeze(2) + self.second(x).unsqueeze(1)) + self._bias(batch)[:, None, None, :]

    def _pair_targets(self, batch: dict[str, Tensor]) -> tuple[Tensor, Tensor]:
        order, mask = batch["order"], batch["question_mask"]
        length = order.shape[1]
        # rank[b, i] = where question position i comes in the answer's order (padding goes to a spare column)
        rank = torch.full((order.shape[0], length + 1), length, dtype=torch.long)
        index = torch.where(order >= 0, order, torch.full_like(order, length))
        rank.scatter_(1, index, torch.arange(length).expand_as(order).contiguous())
        rank = rank[:, :length]
        target = (rank.unsqueeze(2) < rank.unsqueeze(1)).long()
        pair_mask = mask.unsqueeze(2) & mask.unsqueeze(1) & ~torch.eye(length, dtype=torch.bool)
        return target, pair_mask

    def loss_and_correct(self, batch: dict[str, Tensor]) -> tuple[Tensor, int, int]:
        if self.family == "pair-order":
            x = batch["question"]
            logits = self.first(x[:, 0]) + self.second(x[:, 1]) + self._bias(batch)
            loss = nn.functional.cross_entropy(logits, batch["answer"])
            return loss, int((logits.argmax(-1) == batch["answer"]).sum()), len(logits)
        logits = self._pair_logits(batch)
        target, pair_mask = self._pair_targets(batch)
        loss = nn.functional.cross_entropy(logits[pair_mask], target[pair_mask])
        return loss, int((logits[pair_mask].argmax(-1) == target[pair_mask]).sum()), int(pair_mask.sum())

    def predict(self, batch: dict[str, Tensor]) -> list[Any]:
        if self.family == "pair-order":
            x = batch["question"]
            logits = self.first(x[:, 0]) + self.second(x[:, 1]) + self._bias(batch)
            return [int(i) for i in logits.argmax(-1)]
        mask = batch["question_mask"]
        length = mask.shape[1]
        first = torch.softmax(self._pair_logits(batch), dim=-1)[..., 1]
        pair_mask = mask.unsqueeze(2) & mask.unsqueeze(1) & ~torch.eye(length, dtype=torch.bool)
        wins = (first * pair_mask).sum(-1)
        out = []
        for w, m in zip(wins, mask, strict=True):
            n = int(m.sum())
            # stable: ties keep the shown order
            out.append([int(i) for i in sorted(range(n), key=lambda i: (-float(w[i]), i))])
        return out


class OrderPointer(Net):
    """A pointer network over frozen step features (paper 000 §4.3, BERSON in spirit).

    Steps are projected and encoded by a self-attention encoder without positions (the shown order carries
    no information); an LSTM decoder points at the next step, attending over the steps not yet placed.
    Trained with teacher forcing on the answer's order; decoded greedily.
    """

    family = "sequencing"

    def __init__(
        self, dims: dict[str, int], hidden: int, dropout: float, *, layers: int, heads: int, ffn: int, title: bool
    ) -> None:
        super().__init__()
        self.proj = nn.Sequential(nn.Dropout(dropout), nn.Linear(dims["item"], hidden), nn.Tanh())
        layer = nn.TransformerEncoderLayer(
            hidden, heads, dim_feedforward=ffn, dropout=dropout, batch_first=True, norm_first=True
        )
        self.encoder = nn.TransformerEncoder(layer, layers, norm=nn.LayerNorm(hidden), enable_nested_tensor=False)
        self.title = nn.Linear(dims["procedure"], hidden) if title else None
        self.start = nn.Parameter(torch.randn(hidden) * 0.1)
        self.decoder = nn.LSTMCell(hidden, hidden)
        self.w_enc = nn.Linear(hidden, hidden, bias=False)
        self.w_dec = nn.Linear(hidden, hidden)
        self.v = nn.Linear(hidden, 1, bias=False)

    def _encode(self, batch: dict[str, Tensor]) -> tuple[Tensor, Tensor, Tensor]:
        mask = batch["question_mask"]
        e = self.encoder(self.proj(batch["question"]), src_key_padding_mask=~mask)
        e = e * mask.unsqueeze(-1).to(e.dtype)
        h = _masked_mean(e, mask)
        if self.title is not None:
            h = h + torch.tanh(self.title(batch["procedure"]))
        return e, h, self.w_enc(e)

    def _point(self, keys: Tensor, state: Tensor, available: Tensor) -> Tensor:
        logits = self.v(torch.tanh(keys + self.w_dec(state).unsqueeze(1))).squeeze(-1)
        return logits.masked_fill(~available, _NEG)

    def loss_and_correct(self, batch: dict[str, Tensor]) -> tuple[Tensor, int, int]:
        e, h, keys = self._encode(batch)
        c = torch.zeros_like(h)
        available = batch["question_mask"].clone()
        order = batch["order"]
        x = self.start.expand_as(h)
        losses, correct, total = [], 0, 0
        for t in range(order.shape[1]):
            h, c = self.decoder(x, (h, c))
            logits = self._point(keys, h, available)
            target = order[:, t]
            valid = target >= 0
            if not bool(valid.any()):
                break
            step_target = target.clamp(min=0)
            losses.append(nn.functional.cross_entropy(logits[valid], step_target[valid], reduction="sum"))
            correct += int((logits.argmax(-1)[valid] == step_target[valid]).sum())
            total += int(valid.sum())
            chosen = nn.functional.one_hot(step_target, available.shape[1]).bool() & valid.unsqueeze(1)
            available = available & ~chosen
            x = e[torch.arange(len(e)), step_target]
        loss = torch.stack(losses).sum() / max(total, 1)
        return loss, correct, total

    def predict(self, batch: dict[str, Tensor]) -> list[Any]:
        e, h, keys = self._encode(batch)
        c = torch.zeros_like(h)
        mask = batch["question_mask"]
        available = mask.clone()
        x = self.start.expand_as(h)
        picks = []
        for _ in range(mask.shape[1]):
            h, c = self.decoder(x, (h, c))
            choice = self._point(keys, h, available).argmax(-1)
            picks.append(choice)
            available = available & ~nn.functional.one_hot(choice, mask.shape[1]).bool()
            x = e[torch.arange(len(e)), choice]
        stacked = torch.stack(picks, dim=1)
        return [[int(i) for i in row[: int(m.sum())]] for row, m in zip(stacked, mask, strict=True)]


def build_net(model: str, dims: dict[str, int], hp: dict[str, Any]) -> Net:
    """The network of ``model`` for inputs of ``dims`` with hyperparameters ``hp`` (a TrainConfig as a dict),
    made by the factory its :class:`~procbench.models.registry.ModelSpec` names."""
    spec = get_model(model)
    if spec.factory is None:
        raise BadInput(f"model {model!r} is not a trained model")
    hidden = int(hp["hidden"])
    if hidden < 2 or hidden % 2:
        raise BadInput(f"--hidden must be an even number of at least 2, not {hidden}")
    factory = cast(Callable[[dict[str, int], dict[str, Any]], Net], load_object(spec.factory))
    return factory(dims, hp)


def _width(hp: dict[str, Any]) -> tuple[int, float]:
    return int(hp["hidden"]), float(hp["dropout"])


def _attention(hp: dict[str, Any]) -> dict[str, int]:
    """``layers``, ``heads`` and ``ffn`` of a transformer model (``hidden`` a multiple of ``heads``)."""
    hidden, heads = int(hp["hidden"]), int(hp["heads"])
    if hidden % heads:
        raise BadInput(f"--hidden ({hidden}) must be a multiple of --heads ({heads})")
    return {"layers": int(hp["layers"]), "heads": heads, "ffn": int(hp["ffn"])}


def hasty_choice_only(dims: dict[str, int], hp: dict[str, Any]) -> Net:
    """The ``hasty-choice-only`` network."""
    return HastyChoiceOnly(dims, *_width(hp))


def hasty(dims: dict[str, int], hp: dict[str, Any]) -> Net:
    """The ``hasty`` network."""
    return HastyStudent(dims, *_width(hp))


def impatient_reader(dims: dict[str, int], hp: dict[str, Any]) -> Net:
    """The ``impatient-reader`` network."""
    return ImpatientReader(dims, *_width(hp))


def bidaf(dims: dict[str, int], hp: dict[str, Any]) -> Net:
    """The ``bidaf`` network."""
    return BiDAF(dims, *_width(hp))


def htrn(dims: dict[str, int], hp: dict[str, Any]) -> Net:
    """The ``htrn`` network."""
    return HTRN(dims, *_width(hp), **_attention(hp), max_context=int(hp["max_context"]))


def order_pointer(dims: dict[str, int], hp: dict[str, Any]) -> Net:
    """The ``order-pointer`` network."""
    return OrderPointer(dims, *_width(hp), **_attention(hp), title=bool(hp["title"]))


def pair_order(dims: dict[str, int], hp: dict[str, Any]) -> Net:
    """The ``pair-order`` head."""
    return PairHead(dims, title=bool(hp["title"]), sequencing=False)


def pairwise_sort(dims: dict[str, int], hp: dict[str, Any]) -> Net:
    """The ``pairwise-sort`` head (``pair-order`` on every pair)."""
    return PairHead(dims, title=bool(hp["title"]), sequencing=True)
