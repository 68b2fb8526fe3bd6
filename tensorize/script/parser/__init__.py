"""The TVMScript parser: Python source -> TensorIR.

``entry`` has the decorators' implementation and ``from_source``; ``core`` walks statements;
``evaluator`` evaluates expressions; ``specs`` are the records ``T.xxx`` constructs return.
This package imports nothing eagerly, so ``tensorize.script.tir`` can use ``specs`` without a cycle.
"""
