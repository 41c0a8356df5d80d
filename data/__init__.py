"""Datasets as `dspy.Example`s, and the demo KG and questions that kgqa ships."""
