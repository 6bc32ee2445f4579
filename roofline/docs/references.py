"""The public works that the catalogue's sources name, in full, for the index page.

A source string names a work briefly ("scaling-book 'All About Rooflines'", "DistServe (...,
arXiv 2401.09670) §3.1"); this list says where to find each one. Every entry is public: a paper
with its arXiv id or venue, a book chapter with its address, a file of a public repository.
"""

from __future__ import annotations

__all__ = ["REFERENCES"]

# (the name a source uses, the full reference)
REFERENCES: tuple[tuple[str, str], ...] = (
    ("Ring Attention",
     "H. Liu, M. Zaharia, P. Abbeel, \"Ring Attention with Blockwise Transformers for "
     "Near-Infinite Context\", arXiv 2310.01889, 2023."),
    ("The Llama 3 Herd of Models",
     "A. Dubey et al. (Llama Team, AI @ Meta), \"The Llama 3 Herd of Models\", arXiv "
     "2407.21783, 2024."),
    ("vllm/distributed/utils.py",
     "vLLM, https://github.com/vllm-project/vllm , file vllm/distributed/utils.py "
     "(get_pp_indices: the layers of each pipeline stage)."),
    ("Megatron-LM (Shoeybi",
     "M. Shoeybi, M. Patwary, R. Puri, P. LeGresley, J. Casper, B. Catanzaro, \"Megatron-LM: "
     "Training Multi-Billion Parameter Language Models Using Model Parallelism\", arXiv "
     "1909.08053, 2019."),
    ("Thakur, Rabenseifner & Gropp",
     "R. Thakur, R. Rabenseifner, W. Gropp, \"Optimization of Collective Communication "
     "Operations in MPICH\", International Journal of High Performance Computing Applications "
     "19(1), 2005."),
    ("Patarasuk & Yuan",
     "P. Patarasuk, X. Yuan, \"Bandwidth optimal all-reduce algorithms for clusters of "
     "workstations\", Journal of Parallel and Distributed Computing 69(2), 2009."),
    ("NCCL src/graph/tuning.cc",
     "NVIDIA Collective Communications Library (NCCL), https://github.com/NVIDIA/nccl , file "
     "src/graph/tuning.cc (its latency and bandwidth model of each algorithm and link)."),
    ("GPipe",
     "Y. Huang et al., \"GPipe: Efficient Training of Giant Neural Networks using Pipeline "
     "Parallelism\", NeurIPS 2019, arXiv 1811.06965."),
    ("Megatron-LM 2",
     "D. Narayanan et al., \"Efficient Large-Scale Language Model Training on GPU Clusters "
     "Using Megatron-LM\", SC 2021, arXiv 2104.04473."),
    ("GShard",
     "D. Lepikhin et al., \"GShard: Scaling Giant Models with Conditional Computation and "
     "Automatic Sharding\", arXiv 2006.16668, 2020."),
    ("DeepSpeed-MoE",
     "S. Rajbhandari et al., \"DeepSpeed-MoE: Advancing Mixture-of-Experts Inference and "
     "Training to Power Next-Generation AI Scale\", ICML 2022, arXiv 2201.05596."),
    ("Williams et al., 'Roofline'",
     "S. Williams, A. Waterman, D. Patterson, \"Roofline: an insightful visual performance "
     "model for multicore architectures\", Communications of the ACM 52(4), 2009."),
    ("scaling-book",
     "J. Austin et al., \"How to Scale Your Model\", Google DeepMind, 2025, "
     "https://jax-ml.github.io/scaling-book/ : the chapters \"All About Rooflines\" "
     "(/roofline), \"All the Transformer Math You Need to Know\" (/transformers) and \"All "
     "About Transformer Inference\" (/inference)."),
    ("FlashAttention",
     "T. Dao, D. Y. Fu, S. Ermon, A. Rudra, C. Ré, \"FlashAttention: Fast and Memory-Efficient "
     "Exact Attention with IO-Awareness\", NeurIPS 2022, arXiv 2205.14135."),
    ("FlashAttention-2",
     "T. Dao, \"FlashAttention-2: Faster Attention with Better Parallelism and Work "
     "Partitioning\", arXiv 2307.08691, 2023."),
    ("DistServe",
     "Y. Zhong et al., \"DistServe: Disaggregating Prefill and Decoding for Goodput-optimized "
     "Large Language Model Serving\", OSDI 2024, arXiv 2401.09670."),
    ("SARATHI",
     "A. Agrawal et al., \"SARATHI: Efficient LLM Inference by Piggybacking Decodes with "
     "Chunked Prefills\", arXiv 2308.16369, 2023."),
    ("Pollaczek–Khinchine",
     "L. Kleinrock, \"Queueing Systems, Volume I: Theory\", Wiley, 1975, chapter 5 (the M/G/1 "
     "queue)."),
    ("Mistral 7B",
     "A. Q. Jiang et al., \"Mistral 7B\", arXiv 2310.06825, 2023 (§2: sliding window "
     "attention and the rolling buffer cache)."),
    ("Longformer",
     "I. Beltagy, M. E. Peters, A. Cohan, \"Longformer: The Long-Document Transformer\", "
     "arXiv 2004.05150, 2020 (§3.1: banded attention)."),
    ("Gemma 2",
     "Gemma Team, \"Gemma 2: Improving Open Language Models at a Practical Size\", arXiv "
     "2408.00118, 2024 (§2: local and global attention alternate)."),
    ("Llama",
     "H. Touvron et al., \"LLaMA: Open and Efficient Foundation Language Models\", arXiv "
     "2302.13971, 2023."),
    ("HF transformers modeling_llama.py",
     "Hugging Face transformers, src/transformers/models/llama/modeling_llama.py, "
     "https://github.com/huggingface/transformers (T. Wolf et al., \"Transformers: "
     "State-of-the-Art Natural Language Processing\", EMNLP 2020 System Demonstrations)."),
    ("Mixtral",
     "A. Q. Jiang et al., \"Mixtral of Experts\", arXiv 2401.04088, 2024."),
    ("DeepSeek-V2",
     "DeepSeek-AI, \"DeepSeek-V2: A Strong, Economical, and Efficient Mixture-of-Experts "
     "Language Model\", arXiv 2405.04434, 2024 (§2.1: multi-head latent attention; §2.2: "
     "DeepSeekMoE; Appendix C: the full formulas of MLA)."),
    ("DeepSeek-V3",
     "DeepSeek-AI, \"DeepSeek-V3 Technical Report\", arXiv 2412.19437, 2024; its reference "
     "inference code, https://github.com/deepseek-ai/DeepSeek-V3, inference/model.py (class "
     "MLA, attn_impl \"naive\" and \"absorb\")."),
    ("DeepSeekMoE",
     "D. Dai et al., \"DeepSeekMoE: Towards Ultimate Expert Specialization in "
     "Mixture-of-Experts Language Models\", arXiv 2401.06066, 2024 (§3.2: shared expert "
     "isolation)."),
    ("HF transformers modeling_deepseek.py",
     "Hugging Face transformers, src/transformers/models/deepseek_v2/modeling_deepseek_v2.py "
     "and deepseek_v3/modeling_deepseek_v3.py (first published as modeling_deepseek.py in the "
     "deepseek-ai model repositories on huggingface.co), https://github.com/huggingface/"
     "transformers."),
    ("modeling_qwen2_moe.py",
     "Hugging Face transformers, src/transformers/models/qwen2_moe/modeling_qwen2_moe.py, "
     "https://github.com/huggingface/transformers (Qwen2MoeSparseMoeBlock, "
     "Qwen2MoeDecoderLayer)."),
)
