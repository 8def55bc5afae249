"""Model-graded evaluators: a model judges the candidate (llm_judge) or embeds it (semantic_similarity)."""
