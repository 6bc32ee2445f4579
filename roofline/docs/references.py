"""The public works that the catalogue's sources name, in full: the index page's list and
``references.bib`` are both written from :data:`WORKS`.

A source string names a work briefly ("scaling-book 'All About Rooflines'", "DistServe (...,
arXiv 2401.09670) §3.1"); this list says where to find each one. Every entry is public: a paper
with its arXiv id, venue or DOI, a book chapter with its address, a file of a public repository
at a tag or commit.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Work", "WORKS", "REFERENCES", "REPOSITORY", "RELEASED", "text"]

# the roofline software itself, as CITATION.cff names it
REPOSITORY = "https://github.com/roofline-dev/roofline"
RELEASED = 2026  # the year of CITATION.cff's date-released


@dataclass(frozen=True)
class Work:
    """One work. ``kind``: article, inproceedings, book, preprint (arXiv), online (a web book)
    or software (a repository at ``version``). ``authors`` as printed ("H. Liu"); a last
    "others" reads "et al."; a name without a full stop is a group ("DeepSeek-AI")."""

    label: str  # the name a source uses
    key: str  # the BibTeX key: stable, never reused
    kind: str
    title: str
    authors: tuple[str, ...] = ()
    year: int | None = None
    venue: str = ""  # journal, proceedings or publisher
    volume: str = ""
    number: str = ""
    arxiv: str = ""
    doi: str = ""
    url: str = ""
    version: str = ""  # a repository's tag and commit
    note: str = ""  # what the sources take from it


def _paper(label: str, key: str, kind: str, authors: tuple[str, ...], title: str, year: int,
           **more: str) -> Work:
    return Work(label, key, kind, title, authors, year, **more)


def _repo(label: str, key: str, title: str, url: str, version: str, note: str,
          year: int | None = None) -> Work:
    return Work(label, key, "software", title, year=year, url=url, version=version, note=note)


_FA = "https://github.com/Dao-AILab/flash-attention"
_HF = "https://github.com/huggingface/transformers"
_HF_VERSION = "tag v4.57.6"

WORKS: tuple[Work, ...] = (
    _paper("Ring Attention", "liu2023ringattention", "preprint",
           ("H. Liu", "M. Zaharia", "P. Abbeel"),
           "Ring Attention with Blockwise Transformers for Near-Infinite Context", 2023,
           arxiv="2310.01889"),
    _paper("The Llama 3 Herd of Models", "dubey2024llama3", "preprint", ("A. Dubey", "others"),
           "The Llama 3 Herd of Models", 2024, arxiv="2407.21783"),
    _repo("vLLM", "vllm", "vLLM", "https://github.com/vllm-project/vllm",
          "commit 5a6541db9bfa77756459722f69e8c89a0b47a14d",
          "vllm/distributed/utils.py: get_pp_indices, the layers of each pipeline stage; "
          "vllm/model_executor/layers/linear.py: QKVParallelLinear; "
          "vllm/model_executor/layers/vocab_parallel_embedding.py: VocabParallelEmbedding, "
          "ParallelLMHead", 2025),
    _paper("Megatron-LM", "shoeybi2019megatron", "preprint",
           ("M. Shoeybi", "M. Patwary", "R. Puri", "P. LeGresley", "J. Casper", "B. Catanzaro"),
           "Megatron-LM: Training Multi-Billion Parameter Language Models Using Model "
           "Parallelism", 2019, arxiv="1909.08053"),
    _paper("Thakur, Rabenseifner & Gropp", "thakur2005collectives", "article",
           ("R. Thakur", "R. Rabenseifner", "W. Gropp"),
           "Optimization of Collective Communication Operations in MPICH", 2005,
           venue="International Journal of High Performance Computing Applications",
           volume="19", number="1"),
    _paper("Patarasuk & Yuan", "patarasuk2009allreduce", "article", ("P. Patarasuk", "X. Yuan"),
           "Bandwidth optimal all-reduce algorithms for clusters of workstations", 2009,
           venue="Journal of Parallel and Distributed Computing", volume="69", number="2"),
    _repo("NCCL src/graph/tuning.cc", "nccl", "NVIDIA Collective Communications Library (NCCL)",
          "https://github.com/NVIDIA/nccl",
          "tag v2.27.7-1, commit 593de54e52679b51428571c13271e2ea9f91b1b1",
          "src/graph/tuning.cc: its latency (hwLat) and bandwidth model of each algorithm and "
          "link", 2025),
    _paper("GPipe", "huang2019gpipe", "inproceedings", ("Y. Huang", "others"),
           "GPipe: Efficient Training of Giant Neural Networks using Pipeline Parallelism", 2019,
           venue="NeurIPS", arxiv="1811.06965"),
    _paper("TeraPipe", "li2021terapipe", "inproceedings", ("Z. Li", "others"),
           "TeraPipe: Token-Level Pipeline Parallelism for Training Large-Scale Language "
           "Models", 2021, venue="ICML", arxiv="2102.07988",
           note="one sequence's tokens pipelined across the stages: the chunked schedule"),
    _paper("LMSYS blog \"Pipeline Parallelism in SGLang\"", "lmsys2026pipeline", "online",
           ("LMSYS Org",),
           "Pipeline Parallelism in SGLang: Scaling to Million-Token Contexts and Beyond", 2026,
           venue="LMSYS Org blog", url="https://www.lmsys.org/blog/2026-01-15-chunked-pipeline",
           note="chunked pipeline parallelism; DeepSeek-V3.1 at 128K tokens on 4 × 8 H20 "
           "(TP 8, PP 4), the measurement that beats the whole-prompt sum"),
    _paper("Megatron-LM 2", "narayanan2021megatron", "inproceedings", ("D. Narayanan", "others"),
           "Efficient Large-Scale Language Model Training on GPU Clusters Using Megatron-LM",
           2021, venue="SC", arxiv="2104.04473"),
    _paper("GShard", "lepikhin2020gshard", "preprint", ("D. Lepikhin", "others"),
           "GShard: Scaling Giant Models with Conditional Computation and Automatic Sharding",
           2020, arxiv="2006.16668"),
    _paper("DeepSpeed-MoE", "rajbhandari2022deepspeedmoe", "inproceedings",
           ("S. Rajbhandari", "others"),
           "DeepSpeed-MoE: Advancing Mixture-of-Experts Inference and Training to Power "
           "Next-Generation AI Scale", 2022, venue="ICML", arxiv="2201.05596"),
    _paper("Williams et al., 'Roofline'", "williams2009roofline", "article",
           ("S. Williams", "A. Waterman", "D. Patterson"),
           "Roofline: an insightful visual performance model for multicore architectures", 2009,
           venue="Communications of the ACM", volume="52", number="4"),
    _paper("Yang, Kurth & Williams", "yang2020hierarchical", "article",
           ("C. Yang", "T. Kurth", "S. Williams"),
           "Hierarchical Roofline analysis for GPUs: Accelerating performance optimization for "
           "the NERSC-9 Perlmutter system", 2020,
           venue="Concurrency and Computation: Practice and Experience", volume="32",
           number="20", arxiv="2009.05257", doi="10.1002/cpe.5547"),
    _paper("Belady 1966", "belady1966replacement", "article", ("L. A. Belady",),
           "A study of replacement algorithms for a virtual-storage computer", 1966,
           venue="IBM Systems Journal", volume="5", number="2", doi="10.1147/sj.52.0078",
           note="the optimal replacement policy: evict the block used furthest in the future"),
    _paper("scaling-book", "austin2025scalingbook", "online", ("J. Austin", "others"),
           "How to Scale Your Model", 2025, venue="Google DeepMind",
           url="https://jax-ml.github.io/scaling-book/",
           note="the chapters \"All About Rooflines\" (/roofline), \"All the Transformer Math "
           "You Need to Know\" (/transformers) and \"All About Transformer Inference\" "
           "(/inference)"),
    _paper("FlashAttention", "dao2022flashattention", "inproceedings",
           ("T. Dao", "D. Y. Fu", "S. Ermon", "A. Rudra", "C. Ré"),
           "FlashAttention: Fast and Memory-Efficient Exact Attention with IO-Awareness", 2022,
           venue="NeurIPS", arxiv="2205.14135"),
    _paper("FlashAttention-2", "dao2024flashattention2", "inproceedings", ("T. Dao",),
           "FlashAttention-2: Faster Attention with Better Parallelism and Work Partitioning",
           2024, venue="ICLR", arxiv="2307.08691"),
    _paper("FlashAttention-3", "shah2024flashattention3", "inproceedings",
           ("J. Shah", "G. Bikshandi", "Y. Zhang", "V. Thakkar", "P. Ramani", "T. Dao"),
           "FlashAttention-3: Fast and Accurate Attention with Asynchrony and Low-precision",
           2024, venue="NeurIPS", arxiv="2407.08608"),
    _repo("flash_fwd_launch_template.h", "flashattention_kernels",
          "FlashAttention (Dao-AILab/flash-attention)", _FA,
          "tag v2.8.3, commit 060c9188beec3a8b62b33a3bfa6d5d2d44975fab",
          "csrc/flash_attn/src/flash_fwd_launch_template.h: FlashAttention-2's forward "
          "kernels, 128-row tiles for head dimensions up to 128, and their grid of one block "
          "per query tile, sequence and head; hopper/tile_size.h: FlashAttention-3's, 128 rows "
          "for head dimensions 128 and 256, 192 for 64; hopper/tile_scheduler.hpp: its tile "
          "schedulers; csrc/flash_attn/flash_api.cpp: mha_fwd's softmax_lse, fp32", 2025),
    _paper("DistServe", "zhong2024distserve", "inproceedings", ("Y. Zhong", "others"),
           "DistServe: Disaggregating Prefill and Decoding for Goodput-optimized Large "
           "Language Model Serving", 2024, venue="OSDI", arxiv="2401.09670"),
    _paper("SARATHI", "agrawal2023sarathi", "preprint", ("A. Agrawal", "others"),
           "SARATHI: Efficient LLM Inference by Piggybacking Decodes with Chunked Prefills",
           2023, arxiv="2308.16369"),
    _paper("Sarathi-Serve", "agrawal2024sarathiserve", "inproceedings", ("A. Agrawal", "others"),
           "Taming Throughput-Latency Tradeoff in LLM Inference with Sarathi-Serve", 2024,
           venue="OSDI", arxiv="2403.02310",
           note="§4.2–4.3: chunked prefills, stall-free hybrid batches, the token budget"),
    _paper("Erlang", "erlang1909theory", "article", ("A. K. Erlang",),
           "The Theory of Probabilities and Telephone Conversations", 1909,
           venue="Nyt Tidsskrift for Matematik B", volume="20",
           note="the M/D/1 waiting-time distribution"),
    _paper("Pollaczek–Khinchine", "kleinrock1975queueing", "book", ("L. Kleinrock",),
           "Queueing Systems, Volume I: Theory", 1975, venue="Wiley",
           note="chapter 5: the M/G/1 queue"),
    _paper("Mistral 7B", "jiang2023mistral", "preprint", ("A. Q. Jiang", "others"),
           "Mistral 7B", 2023, arxiv="2310.06825",
           note="§2: sliding window attention and the rolling buffer cache"),
    _paper("Longformer", "beltagy2020longformer", "preprint",
           ("I. Beltagy", "M. E. Peters", "A. Cohan"),
           "Longformer: The Long-Document Transformer", 2020, arxiv="2004.05150",
           note="§3.1: banded attention"),
    _paper("Gemma 2", "gemma2024gemma2", "preprint", ("Gemma Team",),
           "Gemma 2: Improving Open Language Models at a Practical Size", 2024,
           arxiv="2408.00118", note="§2: local and global attention alternate"),
    _paper("Llama", "touvron2023llama", "preprint", ("H. Touvron", "others"),
           "LLaMA: Open and Efficient Foundation Language Models", 2023, arxiv="2302.13971"),
    _repo("HF transformers modeling_llama.py", "hf_modeling_llama", "Hugging Face transformers",
          _HF, _HF_VERSION,
          "src/transformers/models/llama/modeling_llama.py: LlamaDecoderLayer; the library: "
          "T. Wolf et al., \"Transformers: State-of-the-Art Natural Language Processing\", "
          "EMNLP 2020 System Demonstrations", 2026),
    _paper("Mixtral", "jiang2024mixtral", "preprint", ("A. Q. Jiang", "others"),
           "Mixtral of Experts", 2024, arxiv="2401.04088"),
    _paper("Data Movement Is All You Need", "ivanov2021datamovement", "inproceedings",
           ("A. Ivanov", "N. Dryden", "T. Ben-Nun", "S. Li", "T. Hoefler"),
           "Data Movement Is All You Need: A Case Study on Optimizing Transformers", 2021,
           venue="MLSys", arxiv="2007.00072",
           note="§4: fusing the element-wise operators removes their HBM traffic"),
    _paper("GPTQ", "frantar2023gptq", "inproceedings", ("E. Frantar", "S. Ashkboos",
           "T. Hoefler", "D. Alistarh"), "GPTQ: Accurate Post-Training Quantization for "
           "Generative Pre-trained Transformers", 2023, venue="ICLR", arxiv="2210.17323",
           note="4-bit weights in groups with 16-bit scales; the LM head left unquantized"),
    _paper("AWQ", "lin2024awq", "inproceedings", ("J. Lin", "others"), "AWQ: Activation-aware "
           "Weight Quantization for On-Device LLM Compression and Acceleration", 2024,
           venue="MLSys", arxiv="2306.00978"),
    _paper("DeepSeek-V2", "deepseekai2024deepseekv2", "preprint", ("DeepSeek-AI",),
           "DeepSeek-V2: A Strong, Economical, and Efficient Mixture-of-Experts Language Model",
           2024, arxiv="2405.04434",
           note="§2.1: multi-head latent attention; §2.2: DeepSeekMoE; Appendix C: the full "
           "formulas of MLA"),
    _paper("DeepSeek-V3", "deepseekai2024deepseekv3", "preprint", ("DeepSeek-AI",),
           "DeepSeek-V3 Technical Report", 2024, arxiv="2412.19437"),
    _repo("DeepSeek-V3 reference code", "deepseekv3_code", "DeepSeek-V3",
          "https://github.com/deepseek-ai/DeepSeek-V3",
          "tag v1.0.0, commit f6e34dd26772dd4a216be94a8899276c5dca9e43",
          "inference/model.py: class MLA, attn_impl \"naive\" and \"absorb\"", 2025),
    _repo("DeepEP", "deepep", "DeepEP: an efficient expert-parallel communication library",
          "https://github.com/deepseek-ai/DeepEP",
          "tag v1.2.1, commit 9af0e0d0e74f3577af1979c9b9e1ac2cad0104ee",
          "README.md: normal kernels with NVLink and RDMA forwarding, for training and "
          "inference prefilling", 2025),
    _paper("DeepSeekMoE", "dai2024deepseekmoe", "preprint", ("D. Dai", "others"),
           "DeepSeekMoE: Towards Ultimate Expert Specialization in Mixture-of-Experts Language "
           "Models", 2024, arxiv="2401.06066", note="§3.2: shared expert isolation"),
    _repo("HF transformers modeling_deepseek.py", "hf_modeling_deepseek",
          "Hugging Face transformers", _HF, _HF_VERSION,
          "src/transformers/models/deepseek_v2/modeling_deepseek_v2.py and "
          "deepseek_v3/modeling_deepseek_v3.py: DeepseekV2MoE, first_k_dense_replace; first "
          "published as modeling_deepseek.py in the deepseek-ai model repositories on "
          "huggingface.co, with moe_layer_freq", 2026),
    _repo("modeling_qwen2_moe.py", "hf_modeling_qwen2_moe", "Hugging Face transformers", _HF,
          _HF_VERSION,
          "src/transformers/models/qwen2_moe/modeling_qwen2_moe.py: Qwen2MoeSparseMoeBlock, "
          "Qwen2MoeDecoderLayer", 2026),
    # --- issue 31: linear attention and sparse attention ---
    _paper("Gated Delta Networks", "yang2025gated", "inproceedings",
           ("S. Yang", "J. Kautz", "A. Hatamizadeh"),
           "Gated Delta Networks: Improving Mamba2 with Delta Rule", 2025,
           venue="International Conference on Learning Representations (ICLR)",
           arxiv="2412.06464", note="§3: the gated delta rule and its chunkwise form"),
    _repo("modeling_qwen3_next.py", "hf_modeling_qwen3_next", "Hugging Face transformers", _HF,
          "commit 7515843b617551b008901620ca58f1208bbc330d",
          "src/transformers/models/qwen3_next/modeling_qwen3_next.py: Qwen3NextGatedDeltaNet, "
          "torch_chunk_gated_delta_rule, torch_recurrent_gated_delta_rule", 2025),
    _repo("flash-linear-attention", "fla", "flash-linear-attention: efficient implementations "
          "of linear attention models", "https://github.com/fla-org/flash-linear-attention",
          "commit bc3b101dcb713ddc5bd8924b66754eb68b5ccf89",
          "fla/ops/gated_delta_rule/chunk.py, chunk_fwd.py, wy_fast.py and "
          "fla/ops/common/chunk_delta_h.py, chunk_o.py: chunk_gated_delta_rule's kernels", 2026),
    # --- issue 29: the estimate beside the bound ---
    _paper("Matrix Multiplication Background", "nvidia2023matmul", "online",
           ("NVIDIA",), "Matrix Multiplication Background User's Guide", 2023,
           venue="NVIDIA Deep Learning Performance Documentation",
           url="https://docs.nvidia.com/deeplearning/performance/"
               "dl-performance-matrix-multiplication/",
           note="Dimension Quantization Effects: Tile Quantization and Wave Quantization"),
    _paper("Profiling in PyTorch (Part 2)", "gosthipaty2026profiling", "online",
           ("A. R. Gosthipaty", "R. Ouazan Reboul", "S. Paniego", "P. Cuenca", "S. Paul"),
           "Profiling in PyTorch (Part 2): From nn.Linear to a Fused MLP", 2026,
           venue="Hugging Face blog", url="https://huggingface.co/blog/torch-mlp-fusion",
           note="cuBLAS's tile per GEMM shape on an A100 (128x128 and 128x256 kernels)"),
    _repo("model_executor/models/llama.py", "vllm_llama", "vLLM", "https://github.com/vllm-project/vllm",
          "commit 02d710837549a368073552333f66d714477415d2",
          "vllm/model_executor/models/llama.py: LlamaDecoderLayer, LlamaAttention.forward, "
          "LlamaMLP.forward (the tensors a layer holds at once)", 2026),
    _repo("mamba_utils.py", "vllm_mamba_utils", "vLLM", "https://github.com/vllm-project/vllm",
          "commit 02d710837549a368073552333f66d714477415d2",
          "vllm/model_executor/layers/mamba/mamba_utils.py: MambaStateShapeCalculator."
          "gated_delta_net_state_shape (a conv state of K − 1 columns, the recurrent state)",
          2026),
    _repo("DeepSeek-V3.2-Exp report", "deepseekai2025v32exp", "DeepSeek-V3.2-Exp: Boosting "
          "Long-Context Efficiency with DeepSeek Sparse Attention",
          "https://github.com/deepseek-ai/DeepSeek-V3.2-Exp",
          "commit 3b99a5350d260b7c2a357e82362305509e2d0724",
          "DeepSeek_V3_2.pdf (DeepSeek-AI's technical report): §1 the lightning indexer and "
          "top-k selection, 'Instantiate DSA Under MLA', §3 inference costs, Appendix A", 2025),
    _repo("DeepSeek-V3.2-Exp inference/model.py", "deepseekv32_code", "DeepSeek-V3.2-Exp",
          "https://github.com/deepseek-ai/DeepSeek-V3.2-Exp",
          "commit 3b99a5350d260b7c2a357e82362305509e2d0724",
          "inference/model.py: class Indexer, class MLA; inference/kernel.py: fp8_index", 2025),
    _repo("DeepGEMM", "deepgemm", "DeepGEMM: clean and efficient FP8 GEMM kernels",
          "https://github.com/deepseek-ai/DeepGEMM",
          "commit 54e22612409371d6364144b69086735beb54e98b",
          "README.md: the V3.2 MQA kernels for the indexer (fp8_mqa_logits)", 2026),
    _repo("FlashMLA", "flashmla", "FlashMLA: efficient multi-head latent attention kernels",
          "https://github.com/deepseek-ai/FlashMLA",
          "commit 9241ae3ef9bac614dd25e45e507e089f888280e0",
          "README.md 'Sparse MLA Prefill' and csrc/sm90/prefill/sparse/phase1.cuh: one thread "
          "block per query token and 64 heads", 2026),
)


def _names(authors: tuple[str, ...]) -> str:
    if authors[-1:] == ("others",):
        return ", ".join(authors[:-1]) + " et al."
    return ", ".join(authors)


def _venue(work: Work) -> str:
    if work.kind == "article":
        return f"{work.venue} {work.volume}({work.number}), {work.year}"
    if work.kind == "inproceedings":
        return f"{work.venue} {work.year}"
    if work.kind == "software":
        return ", ".join(p for p in (work.url, work.version) if p)
    return ", ".join(p for p in (work.venue, f"arXiv {work.arxiv}" if work.arxiv else "",
                                 str(work.year), work.url) if p)


def text(work: Work) -> str:
    """The full reference as the index page prints it.

    >>> text(next(w for w in WORKS if w.label == "Mixtral"))
    'A. Q. Jiang et al., "Mixtral of Experts", arXiv 2401.04088, 2024.'
    """
    title = work.title if work.kind == "software" else f'"{work.title}"'
    parts = [_names(work.authors) if work.authors else "", title, _venue(work)]
    if work.kind in ("article", "inproceedings"):
        parts += [f"arXiv {work.arxiv}" if work.arxiv else "",
                  f"doi {work.doi}" if work.doi else ""]
    note = f" ({work.note})" if work.note else ""
    return ", ".join(p for p in parts if p) + note + "."


# (the name a source uses, the full reference)
REFERENCES: tuple[tuple[str, str], ...] = tuple((w.label, text(w)) for w in WORKS)
