"""Exercise 3: predicted_ops(n_tokens, positive), the nodes of rnn_score's graph."""
from otter.test_files import test_case

OK_FORMAT = False

name = "predicted_ops"
points = 2
all_or_nothing = True


@test_case(name="one_token", hidden=False)
def one_token(predicted_ops):
    got = {k: v for k, v in dict(predicted_ops(1, True)).items() if v}
    assert got == {"accumulate_grad": 2, "matmul": 2, "add": 1, "tanh": 1, "sum": 1, "mul": 1}, got


@test_case(name="longer_sentences_both_signs", hidden=True)
def longer_sentences_both_signs(predicted_ops, rnn_score, sentence, topological_order):
    from collections import Counter

    import numpy as np

    rng = np.random.default_rng(123)
    for n in (7, 9, 12):
        rows = rng.standard_normal((n, 2))
        for signed in (rows, -rows):
            out = rnn_score(sentence(signed.tolist()))
            real = Counter(node.name for node in topological_order(out))
            mine = {k: v for k, v in dict(predicted_ops(n, out.op == "mul")).items() if v}
            assert mine == dict(real), (n, mine, dict(real))
