# A CSV with a text column, a date column and numbers, read with genfromtxt and loadtxt into structured arrays,
# then filtered and summarized.
import io

text = """city,date,temp,rain
Oslo,2024-01-03,-4.5,1.2
Rome,2024-01-03,11.0,0.0
Oslo,2024-01-04,-6.0,0.4
Rome,2024-01-04,12.5,3.1
Lima,2024-01-04,22.1,0.0
Lima,2024-01-05,23.4,0.2
"""
dt = [("city", "U8"), ("date", "datetime64[D]"), ("temp", "f8"), ("rain", "f8")]
table = np.genfromtxt(io.StringIO(text), delimiter=",", skip_header=1, dtype=dt, encoding="utf-8")
cols = np.loadtxt(io.StringIO(text), delimiter=",", skiprows=1, usecols=(2, 3))
cities = np.loadtxt(io.StringIO(text), delimiter=",", skiprows=1, usecols=0, dtype=str)

warm = table[table["temp"] > 0]
per_city = {c: float(table["temp"][table["city"] == c].mean()) for c in np.unique(table["city"]).tolist()}
latest = table["date"].max()
on_latest = table["city"][table["date"] == latest]
rainy = np.count_nonzero(table["rain"] > 0.5)
anomaly = cols[:, 0] - cols[:, 0].mean()
wet_cities = np.unique(cities[cols[:, 1] > 0])

result = {
    "names": list(table.dtype.names), "warm_cities": warm["city"], "per_city": per_city, "latest": latest,
    "on_latest": on_latest, "rainy": rainy, "anomaly": anomaly, "cities": cities, "wet_cities": wet_cities,
    "dates": table["date"], "temps": table["temp"],
}
