"""The screening quiz of a HIT kind: its questions, the SemEval-2013 lexical grader and its use."""
