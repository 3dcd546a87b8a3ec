"""What a model family gives the shared training loop (:mod:`.loop`) and export (:mod:`.export`).

A family is a network, the data it learns from, its loss and validation, its ONNX graph and the parts
of its model file and card that are its own. Everything else (processes, devices, checkpoints,
resume, ``--init``, the moving average, bf16, the time budget, history, curves, quantisation, the
common metadata and card) is the loop's and export's, written once.
"""


from importlib import import_module

import torch

from inference.errors import DataError


class Family:
    """The hooks of one family; ``name`` is its command and its model files' kind."""

    name = None
    title = None           # the model card's first paragraph: what the model is
    normalisation = ()     # the statistics a model file carries for the runtime
    clip = 1.0             # the gradient norm each step is clipped to (None: not clipped)
    ahead = False          # batches made on the CPU by sample(), so that --workers may make them ahead

    def card_title(self, config):
        """The model card's first paragraph for a network of ``config``: what the model is."""
        return self.title

    def add_arguments(self, parser):
        """The family's own command-line options (the loop adds the common ones)."""

    def data(self, args):
        """``(train, validation, meta)``: the training and validation sets and what a model file says
        of them: {"data", "data_files", "subjects", "skeleton", "licence", ...} as plain values."""
        raise NotImplementedError

    def statistics(self, train, args, rng):
        """Normalisation measured on ``train``: {name: numpy array}."""
        raise NotImplementedError

    def config(self, train, args):
        """A new network's configuration, a dict of plain values."""
        raise NotImplementedError

    def retuned(self, config, args):
        """``config``, that of the weights a new run starts from (``--init``), with the settings that only
        training reads (not the network's shape) taken from this command line where it gives them."""
        return config

    def network(self, config, stats):
        """The network (a torch module) of ``config`` for statistics ``stats`` (numpy arrays)."""
        raise NotImplementedError

    def check_init(self, source, train, path):
        """Refuse, with a DataError naming ``path``, a checkpoint ``source`` whose network cannot
        learn from ``train`` (another skeleton, say)."""

    def stats_of(self, file):
        """The statistics a model file (an ``inference.modelfile.ModelFile``) carries: its
        normalisation, and the family's own (``--init`` from a model file; the loop measures the rest)."""
        return dict(file.normalisation)

    def meta_of(self, file):
        """What ``check_init`` reads of a run's record (its checkpoint's ``meta``) that a model file
        (an ``inference.modelfile.ModelFile``) carries too (``--init`` from a model file)."""
        return {}

    def weights_of(self, model, stored):
        """``model``'s state dict from the weights of one of its model files (``stored``:
        :func:`.onnx_tools.stored_weights`), for ``--init`` from a model file."""
        raise DataError(f"--init from a model file works for RTN and MANN models; for a {self.name} model give "
                        "the checkpoint.pt of the run that made it")

    def optimiser(self, model, args):
        """The optimiser of ``model``'s weights at rate ``args.lr``."""
        return torch.optim.Adam(model.parameters(), lr=args.lr)

    def rate(self, step, train, args):
        """The learning rate of optimiser step ``step`` (counted over the whole run, resumes included)
        as a factor of ``--lr``: a schedule's, or 1."""
        return 1.0

    def batch(self, train, args, rng, step_rng, device):
        """One training batch: ``rng`` is this process's, ``step_rng`` the same on every process (both
        seeded by the step alone: :func:`.ahead.step_rngs`)."""
        return self.placed(train, self.sample(train, args, rng, step_rng), device)

    def sample(self, train, args, rng, step_rng):
        """A family that is ``ahead``: one batch as the CPU makes it (plain values and numpy arrays), in a
        worker process or in process, with nothing drawn but from ``rng`` and ``step_rng``."""
        raise NotImplementedError

    def placed(self, train, sample, device):
        """A family that is ``ahead``: ``sample`` (what :meth:`sample` made, its arrays maybe turned to
        tensors by a worker) on ``device``, as :meth:`loss` reads a batch."""
        raise NotImplementedError

    def loss(self, net, norm, batch, args):
        """``(total, {part: value})`` of ``net`` (maybe wrapped for DDP) on ``batch``; ``norm`` holds
        the statistics as tensors on the batch's device."""
        raise NotImplementedError

    def validate(self, model, norm, validation, args, device):
        """{name: number} on the validation set, the same windows every time."""
        raise NotImplementedError

    def graph(self, model):
        """The ONNX ModelProto to ship."""
        raise NotImplementedError

    def metadata(self, state, model):
        """The family's own metadata keys (``betwixt.<key>``: string) for a model file of ``state``."""
        return {}

    def check_export(self, model, path):
        """The largest difference between torch and onnxruntime on the exported file."""
        raise NotImplementedError

    def card(self, state, model, metadata, path, bench_data=None, data=None, cache=None):
        """The model card's sections of its own for the file at ``path``, exported from ``model`` (the
        network as shipped), as lists of Markdown lines: {"use": [...], "measured": [...]}; ``bench_data``
        and ``data`` ask for measurements, which the family makes and its card module formats."""
        return {}

    def converted(self, state, old):
        """``state`` (converted by :func:`.checkpoint.convert` from ``old``, an earlier version's
        checkpoint) with the family's own parts brought up to date."""
        return state


def one_data_set(args, name):
    """The one ``--data`` of a family that learns from a single data set (``--data`` may be given
    several times for the RTN, which brings them onto one skeleton)."""
    if len(args.data) > 1:
        raise DataError(f"{name} learns from one data set, not {len(args.data)}: give --data once")
    return args.data[0]


FAMILIES = {"rtn": ("rtn.family", "RTNFamily"),   # name -> module (in this package) and class
            "mann": ("mann.family", "MANNFamily"),
            "mvae": ("mvae.family", "MVAEFamily")}


def family(name):
    """The family called ``name`` (imported only when asked for: a family's module imports its network)."""
    module, cls = FAMILIES[name]
    return getattr(import_module(f".{module}", __package__), cls)()
