"""Models and what scores with them: RM kinds, LLM backends, encoders, rubric judges, retrievers, profile
strategies, the list-wise rule and chunked scoring. Imports tasks.core only."""
