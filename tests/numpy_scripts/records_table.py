# A table of employee records as a structured array: field access, sorting by fields, grouping by a string label,
# and numeric work on the extracted fields.
rng = np.random.default_rng(7)
n = 40
depts = np.array(["eng", "ops", "sales", "hr"])
people = np.zeros(n, dtype=[("name", "U8"), ("dept", "U6"), ("age", "i4"), ("salary", "f8")])
people["name"] = [f"p{i:03d}" for i in range(n)]
people["dept"] = depts[rng.integers(0, 4, n)]
people["age"] = rng.integers(22, 65, n)
people["salary"] = np.round(rng.normal(70_000, 12_000, n), 2)

names = people.dtype.names
by_age = np.sort(people, order=["age", "name"])
oldest = by_age[-3:]["name"]
groups, inverse, counts = np.unique(people["dept"], return_inverse=True, return_counts=True)
mean_salary = np.bincount(inverse, weights=people["salary"]) / counts
eng = people[people["dept"] == "eng"]
raise_ = np.where(people["age"] > 50, people["salary"] * 1.05, people["salary"])
z = (people["salary"] - people["salary"].mean()) / people["salary"].std()
people["salary"][people["dept"] == "hr"] += 1000.0
top = people[np.argsort(people["salary"], kind="stable")[::-1][:5]][["name", "salary"]]

result = {
    "names": list(names), "oldest": oldest, "groups": groups, "counts": counts, "mean_salary": mean_salary,
    "eng_ages": eng["age"], "raise": raise_, "z": z, "hr_total": people["salary"][people["dept"] == "hr"].sum(),
    "top": top, "first": people[0]["name"].item(), "age_sum": int(people["age"].sum()),
}
