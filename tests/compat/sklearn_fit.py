"""scikit-learn: a random forest and a logistic regression fitted on synthetic data."""
from sklearn.datasets import make_classification
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split

from compat_rounds import rounds


def work(i):
    x, y = make_classification(n_samples=2000, n_features=20, random_state=i)
    xa, xb, ya, yb = train_test_split(x, y, random_state=i)
    forest = RandomForestClassifier(n_estimators=20, random_state=i, n_jobs=1).fit(xa, ya)
    logit = LogisticRegression(max_iter=500).fit(xa, ya)
    return (round(forest.score(xb, yb), 6), round(logit.score(xb, yb), 6))


for r in rounds(3, work):
    print(r)
