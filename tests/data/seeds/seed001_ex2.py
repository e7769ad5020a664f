import tensorflow as tf
import numpy as np
import time

# Create a dummy dataset
train_data = np.random.rand(1000, 100)
train_labels = np.random.randint(0, 10, 1000)

# Model definition (same as before)
model = tf.keras.Sequential([
    tf.keras.layers.Dense(128, activation='relu', input_shape=(100,)),
    tf.keras.layers.Dense(10, activation='softmax')
])

optimizer = tf.keras.optimizers.Adam(0.001)
loss_fn = tf.keras.losses.SparseCategoricalCrossentropy()

# Function for training a single batch
@tf.function
def train_step(x, y, model, optimizer, loss_fn):
    with tf.GradientTape() as tape:
        logits = model(x)
        loss = loss_fn(y, logits)
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss

# Training on CPU
start_cpu = time.time()
with tf.device('/CPU:0'):
    for i in range(100):
        batch_index = (i*10)%1000
        loss_cpu = train_step(train_data[batch_index:batch_index+10], train_labels[batch_index:batch_index+10], model, optimizer, loss_fn).numpy()

end_cpu = time.time()
print(f"CPU training time: {end_cpu - start_cpu:.4f} seconds")

# Training on GPU
start_gpu = time.time()
with tf.device('/GPU:0'):
    for i in range(100):
        batch_index = (i*10)%1000
        loss_gpu = train_step(train_data[batch_index:batch_index+10], train_labels[batch_index:batch_index+10], model, optimizer, loss_fn).numpy()
end_gpu = time.time()
print(f"GPU training time: {end_gpu - start_gpu:.4f} seconds")
